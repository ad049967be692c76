#include "jit/specializer.h"

#include <xxhash.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/embedded_sources.h"
#include "jit/nvrtc_compiler.h"
#include "jit/source_closure.h"

namespace jitgemm::jit {
namespace {

const char* DeviceType(DataType t) {
  switch (t) {
    case DataType::kF32:
      return "float";
    case DataType::kF16:
      return "jitgemm::half_t";
    case DataType::kBF16:
      return "jitgemm::bfloat16_t";
  }
  return "void";
}

const char* Bool(bool b) { return b ? "true" : "false"; }

int64_t Stride(int64_t s) { return s == kNoStride ? 0 : s; }

}  // namespace

KernelSource Specialize(const GemmProblem& p, const KernelConfig& config,
                        const KernelFamily& family, const LaunchShape& shape,
                        int pointer_alignment) {
  const int64_t batch = p.batch_count;
  const int align_a = OperandAlignment(p.a, p.m, p.k, batch, pointer_alignment);
  const int align_b = OperandAlignment(p.b, p.k, BColumns(p), batch, pointer_alignment);
  const int align_c = OperandAlignment(p.c, p.m, p.n, batch, pointer_alignment);
  const int align_d = OperandAlignment(p.d, p.m, p.n, batch, pointer_alignment);
  const int align_bias = BiasAlignment(p, pointer_alignment);
  const bool has_c = p.epilogue.beta != 0.0f;
  const int threads = static_cast<int>(shape.block[0] * shape.block[1] * shape.block[2]);
  auto row = [](const Operand& o) { return Bool(o.layout == Layout::kRowMajor); };
  auto lchar = [](const Operand& o) { return o.layout == Layout::kRowMajor ? "r" : "c"; };

  KernelSource out;
  out.kernel_name =
      absl::StrFormat("gemm_%s%s_%s%s_%s%s_%s_%dx%dx%d_w%dx%d_s%d", FamilyName(config.family),
                      family.Sm90aOnly(config) ? "_sm90a" : "", DataTypeName(p.a.type),
                      p.d.type != p.a.type ? absl::StrCat("_", DataTypeName(p.d.type)) : "",
                      lchar(p.a), lchar(p.b), lchar(p.d), config.block_m, config.block_n,
                      config.block_k, config.warps_m, config.warps_n, config.stages);
  if (config.split_k > 1) absl::StrAppend(&out.kernel_name, "_sk", config.split_k);
  if (has_c) absl::StrAppend(&out.kernel_name, "_beta");
  if (p.epilogue.bias == BiasMode::kPerColumn) absl::StrAppend(&out.kernel_name, "_bias_col");
  if (p.epilogue.bias == BiasMode::kPerRow) absl::StrAppend(&out.kernel_name, "_bias_row");
  if (p.epilogue.activation != Activation::kNone) {
    absl::StrAppend(&out.kernel_name, "_", ActivationName(p.epilogue.activation));
  }
  if (p.epilogue.gate == Gate::kHalves) absl::StrAppend(&out.kernel_name, "_glu");
  if (config.pdl) absl::StrAppend(&out.kernel_name, "_pdl");
  if (config.early_b) absl::StrAppend(&out.kernel_name, "_earlyb");
  if (config.x_copy > 0) absl::StrAppend(&out.kernel_name, "_xc", config.x_copy);
  if (config.cluster_k) absl::StrAppend(&out.kernel_name, "_ck");
  if (config.cluster_m > 1) absl::StrAppend(&out.kernel_name, "_cm", config.cluster_m);
  if (config.ping_pong) absl::StrAppend(&out.kernel_name, "_pp");
  if (config.split_units > 0) absl::StrAppend(&out.kernel_name, "_su", config.split_units);
  // kM = 0 in the spec: one kernel serves every M up to block_m.
  if (config.runtime_m) absl::StrAppend(&out.kernel_name, "_rtm");

  std::string& s = out.source;
  absl::StrAppend(&s, "// ", out.kernel_name, "\n#include \"", family.header(), "\"\n\n");
  absl::StrAppend(&s, "struct JitgemmSpec {\n");
  absl::StrAppendFormat(&s,
                        "  using ElementA = %s;\n  using ElementB = %s;\n  using ElementC = %s;\n"
                        "  using ElementD = %s;\n",
                        DeviceType(p.a.type), DeviceType(p.b.type), DeviceType(p.c.type),
                        DeviceType(p.d.type));
  absl::StrAppendFormat(&s, "  static constexpr int kM = %d, kN = %d, kK = %d;\n",
                        config.runtime_m ? 0 : p.m, p.n, p.k);
  absl::StrAppendFormat(&s,
                        "  static constexpr bool kRowA = %s, kRowB = %s, kRowC = %s, kRowD = %s;\n",
                        row(p.a), row(p.b), row(p.c), row(p.d));
  absl::StrAppendFormat(
      &s, "  static constexpr jitgemm::int64 kLda = %d, kLdb = %d, kLdc = %d, kLdd = %d;\n", p.a.ld,
      p.b.ld, p.c.ld, p.d.ld);
  absl::StrAppendFormat(&s, "  static constexpr int kBatch = %d;\n", batch);
  absl::StrAppendFormat(&s,
                        "  static constexpr jitgemm::int64 kStrideA = %d, kStrideB = %d, "
                        "kStrideC = %d, kStrideD = %d, kStrideBias = %d;\n",
                        Stride(p.a.batch_stride), Stride(p.b.batch_stride),
                        Stride(p.c.batch_stride), Stride(p.d.batch_stride),
                        p.epilogue.bias_batch_stride);
  absl::StrAppendFormat(&s,
                        "  static constexpr int kAlignA = %d, kAlignB = %d, kAlignC = %d, "
                        "kAlignD = %d, kAlignBias = %d;\n",
                        align_a, align_b, align_c, align_d, align_bias);
  absl::StrAppendFormat(&s, "  static constexpr bool kHasC = %s;\n", Bool(has_c));
  absl::StrAppendFormat(&s, "  static constexpr int kBias = %d, kAct = %d;\n",
                        static_cast<int>(p.epilogue.bias), static_cast<int>(p.epilogue.activation));
  absl::StrAppendFormat(&s, "  static constexpr bool kPdl = %s;\n", Bool(config.pdl));
  absl::StrAppendFormat(&s,
                        "  static constexpr int kBlockM = %d, kBlockN = %d, kBlockK = %d, "
                        "kWarpsM = %d, kWarpsN = %d, kStages = %d, kSplitK = %d;\n",
                        config.block_m, config.block_n, config.block_k, config.warps_m,
                        config.warps_n, config.stages, config.split_k);
  absl::StrAppendFormat(&s, "  static constexpr int kThreads = %d;\n", threads);
  absl::StrAppend(&s, family.ExtraSpecFields(p, config));
  absl::StrAppend(&s, "};\n");
  out.name_expression = absl::StrCat(family.kernel_template(), "<JitgemmSpec>");
  // The instantiation itself: name expressions make NVRTC emit it.
  return out;
}

KernelSource SpecializeFor(const GemmProblem& problem, const KernelConfig& config,
                           const TargetInfo& target, int pointer_alignment) {
  const KernelFamily& family = GetFamily(config.family);
  return Specialize(problem, config, family, family.Shape(problem, config, target),
                    pointer_alignment);
}

const std::string& EmbeddedSourcesHash() {
  static const std::string* const kHash = [] {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    for (const auto& src : EmbeddedSources()) {
      XXH3_64bits_update(state, src.name.data(), src.name.size());
      XXH3_64bits_update(state, "\0", 1);
      XXH3_64bits_update(state, src.text.data(), src.text.size());
      XXH3_64bits_update(state, "\0", 1);
    }
    auto* hash = new std::string(absl::StrFormat("%016x", XXH3_64bits_digest(state)));
    XXH3_freeState(state);
    return hash;
  }();
  return *kHash;
}

std::string KeyText(const KernelSource& source, const std::string& arch, int nvrtc_version) {
  return absl::StrCat("jitgemm-kernel-key\nabi=", kLibraryAbiVersion, "\nnvrtc=", nvrtc_version,
                      "\narch=", arch, "\noptions=", absl::StrJoin(CompileOptions(arch), " "),
                      "\nsources=", KernelSourcesHash(source.source), "\nname=", source.kernel_name,
                      "\nexpr=", source.name_expression, "\n", source.source);
}

}  // namespace jitgemm::jit
