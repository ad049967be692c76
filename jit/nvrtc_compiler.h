// NVRTC, opened with dlopen: turns a generated translation unit into a cubin
// for a named architecture. Needs no GPU and no CUDA include path: the kernel
// templates reach NVRTC as embedded in-memory headers.
//
// Thread safety: Compile may run concurrently from many threads (NVRTC
// programs are independent).
#ifndef JITGEMM_JIT_NVRTC_COMPILER_H_
#define JITGEMM_JIT_NVRTC_COMPILER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace jitgemm::jit {

struct CompileRequest {
  std::string source;           // the translation unit
  std::string program_name;     // shown in the log, e.g. the kernel name
  std::string name_expression;  // e.g. "jitgemm::simt::GemmSimt<JitgemmSpec>"
  std::string arch;             // e.g. "sm_90a"
};

struct CompiledKernel {
  std::string cubin;
  std::string lowered_name;  // mangled symbol of the name expression
  std::string log;           // NVRTC + ptxas output
  int registers = -1;        // from the ptxas report
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_bytes = 0;
  double compile_ms = 0;
};

// NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0), or
// FailedPrecondition when libnvrtc cannot be loaded.
absl::StatusOr<int> NvrtcVersion();

// Whether this process has opened libnvrtc (NvrtcVersion or Compile ran).
bool NvrtcLoaded();

// The file of the libnvrtc this process opened (loading it if needed).
absl::StatusOr<std::string> NvrtcLibraryPath();

// The variables that choose which libnvrtc is opened (JITGEMM_NVRTC_LIBRARY,
// CUDA_HOME, CUDA_PATH, LD_LIBRARY_PATH), as one text: a recorded NVRTC
// version holds only while this text and the library file are unchanged.
std::string NvrtcSelection();

// The options every compile uses (part of the cache key).
std::vector<std::string> CompileOptions(const std::string& arch);

// Compiles. A compile error is Internal, with the NVRTC log and the generated
// source inside the message.
absl::StatusOr<CompiledKernel> Compile(const CompileRequest& request);

// Parses ptxas "-v" output into the register/spill fields of `kernel`.
void ParsePtxasReport(const std::string& log, CompiledKernel* kernel);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_NVRTC_COMPILER_H_
