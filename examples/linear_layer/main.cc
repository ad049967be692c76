// A linear layer y = relu(x W^T + b) in bf16 through jitgemm: plan once, run
// many times, capture in a CUDA graph if you like. Without a GPU it shows the
// validation error a bad problem gets and exits.
#include <cstdio>

#include "jitgemm/plan.h"

int main() {
  // nn.Linear(4096 -> 2048) at batch 8: x (8, 4096), W (2048, 4096), y (8, 2048).
  jitgemm::GemmProblem p = jitgemm::MakeGemm(8, 2048, 4096, jitgemm::DataType::kBF16);
  p.b.layout = jitgemm::Layout::kColMajor;  // W stored (N, K) row-major is B^T
  p.epilogue.bias = jitgemm::BiasMode::kPerColumn;
  p.epilogue.activation = jitgemm::Activation::kRelu;
  std::printf("problem: %s\n", jitgemm::DebugString(p).c_str());

  jitgemm::GemmProblem bad = p;
  bad.a.ld = 100;  // shorter than a row of x
  std::printf("bad problem: %s\n", jitgemm::ValidateProblem(bad).ToString().c_str());

  absl::StatusOr<jitgemm::Plan> plan = jitgemm::Plan::Create(p);
  if (!plan.ok()) {
    std::printf("no plan here: %s\n", plan.status().ToString().c_str());
    return 0;
  }
  std::printf("plan: %s %s (%s)\n", plan->info().backend.c_str(), plan->info().kernel_name.c_str(),
              plan->info().reason.c_str());
  // plan->Run({x, w, nullptr, y, bias}, stream) with device pointers.
  return 0;
}
