// KernelStore: the path from a specialised kernel to a launchable handle.
//
//   KernelSource --key--> memory --> disk cache --> NVRTC compile (single-flight)
//                --> cuLibraryLoadData (once per process; CUlibrary is
//                    context-independent) --> CUkernel --> CUfunction per context
//
// Compiling needs no GPU (offline warm-up); loading needs the driver.
//
// Thread safety: all methods may be called from any number of threads; one
// key is compiled once while other callers wait.
#ifndef JITGEMM_JIT_KERNEL_STORE_H_
#define JITGEMM_JIT_KERNEL_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "jit/driver_api.h"
#include "jit/nvrtc_compiler.h"
#include "jit/single_flight.h"
#include "jit/specializer.h"

namespace jitgemm::jit {

// A compiled kernel as cached: everything needed to load and describe it.
struct KernelBinary {
  std::string kernel_name;
  std::string lowered_name;
  std::string cubin;
  int registers = -1;
  int spill_bytes = 0;
  int stack_bytes = 0;
  double compile_ms = 0;  // 0 when it came from a cache
};

// Payload format of a KernelBinary inside a cache entry.
std::string SerializeBinary(const KernelBinary& binary);
absl::StatusOr<KernelBinary> DeserializeBinary(absl::string_view payload);

struct LoadedKernel {
  std::shared_ptr<const KernelBinary> binary;
  CUlibrary library = nullptr;
  CUkernel kernel = nullptr;
};

struct KernelStoreCounters {
  uint64_t compiles = 0;     // NVRTC compiles run by this process
  uint64_t memory_hits = 0;  // served from this process's memory
  uint64_t disk_hits = 0;    // served from the disk cache
  uint64_t loads = 0;        // cuLibraryLoadData calls
};

struct GetOptions {
  bool allow_compile = true;  // false: JITGEMM_JIT=off, cache only
  bool* compiled = nullptr;   // set to whether this call ran the compiler
};

class KernelStore {
 public:
  static KernelStore& Global();

  // The compiled binary for `source` on `arch`: memory, disk, then NVRTC.
  // NotFound when not cached and compiling is not allowed.
  absl::StatusOr<std::shared_ptr<const KernelBinary>> GetBinary(const KernelSource& source,
                                                                const std::string& arch,
                                                                const GetOptions& options = {});

  // The binary, loaded into the process (needs the driver).
  absl::StatusOr<std::shared_ptr<const LoadedKernel>> GetLoaded(const KernelSource& source,
                                                                const std::string& arch,
                                                                const GetOptions& options = {});

  KernelStoreCounters counters() const;

 private:
  SingleFlight<KernelBinary> binaries_;
  SingleFlight<LoadedKernel> loaded_;
  std::atomic<uint64_t> compiles_{0}, memory_hits_{0}, disk_hits_{0}, loads_{0};
};

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_KERNEL_STORE_H_
