#include "jit/nvrtc_compiler.h"

#include <dlfcn.h>
#include <link.h>
#include <nvrtc.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "jit/embedded_sources.h"

namespace jitgemm::jit {
namespace {

std::atomic<bool> g_loaded{false};

struct NvrtcApi {
  std::string path;
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcAddNameExpression)(nvrtcProgram, const char*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetLoweredName)(nvrtcProgram, const char*, const char**);
};

void* OpenNvrtc(std::string* tried) {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("JITGEMM_NVRTC_LIBRARY"); p && *p) candidates.push_back(p);
  candidates.push_back("libnvrtc.so.13");
  candidates.push_back("libnvrtc.so");
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* home = std::getenv(var); home && *home) {
      candidates.push_back(absl::StrCat(home, "/lib64/libnvrtc.so.13"));
    }
  }
  candidates.push_back("/usr/local/cuda/lib64/libnvrtc.so.13");
  for (const auto& c : candidates) {
    // Lazy binding: NVRTC is large, and a process served from the cache only
    // asks it for its version.
    if (void* lib = dlopen(c.c_str(), RTLD_LAZY | RTLD_LOCAL)) return lib;
    absl::StrAppend(tried, tried->empty() ? "" : ", ", c);
  }
  return nullptr;
}

absl::StatusOr<NvrtcApi> Load() {
  std::string tried;
  void* lib = OpenNvrtc(&tried);
  if (lib == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("NVRTC not found (tried ", tried,
                     "); set JITGEMM_NVRTC_LIBRARY, or run from a warmed cache"));
  }
  g_loaded = true;
  NvrtcApi api{};
  if (link_map* map = nullptr;
      dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    api.path = map->l_name;
  }
  bool ok = true;
  auto resolve = [&](const char* name, auto** fn) {
    void* p = dlsym(lib, name);
    if (p == nullptr) ok = false;
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
  };
#define JITGEMM_RESOLVE(name) resolve(#name, &api.name)
  JITGEMM_RESOLVE(nvrtcGetErrorString);
  JITGEMM_RESOLVE(nvrtcVersion);
  JITGEMM_RESOLVE(nvrtcCreateProgram);
  JITGEMM_RESOLVE(nvrtcDestroyProgram);
  JITGEMM_RESOLVE(nvrtcAddNameExpression);
  JITGEMM_RESOLVE(nvrtcCompileProgram);
  JITGEMM_RESOLVE(nvrtcGetProgramLogSize);
  JITGEMM_RESOLVE(nvrtcGetProgramLog);
  JITGEMM_RESOLVE(nvrtcGetCUBINSize);
  JITGEMM_RESOLVE(nvrtcGetCUBIN);
  JITGEMM_RESOLVE(nvrtcGetLoweredName);
#undef JITGEMM_RESOLVE
  if (!ok) return absl::FailedPreconditionError("libnvrtc lacks a required symbol");
  return api;
}

absl::StatusOr<const NvrtcApi*> GetNvrtc() {
  static const auto* const kApi = new absl::StatusOr<NvrtcApi>(Load());
  if (!kApi->ok()) return kApi->status();
  return &kApi->value();
}

int FindInt(const std::string& log, const std::regex& re) {
  std::smatch m;
  int value = 0;
  if (std::regex_search(log, m, re)) (void)absl::SimpleAtoi(m[1].str(), &value);
  return value;
}

}  // namespace

absl::StatusOr<int> NvrtcVersion() {
  auto api = GetNvrtc();
  if (!api.ok()) return api.status();
  int major = 0, minor = 0;
  (*api)->nvrtcVersion(&major, &minor);
  return major * 1000 + minor * 10;
}

bool NvrtcLoaded() { return g_loaded.load(); }

absl::StatusOr<std::string> NvrtcLibraryPath() {
  auto api = GetNvrtc();
  if (!api.ok()) return api.status();
  if ((*api)->path.empty()) return absl::NotFoundError("the dynamic loader names no NVRTC file");
  return (*api)->path;
}

std::string NvrtcSelection() {
  std::string out;
  for (const char* var : {"JITGEMM_NVRTC_LIBRARY", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH"}) {
    const char* v = std::getenv(var);
    absl::StrAppend(&out, var, "=", v == nullptr ? "<unset>" : v, ";");
  }
  return out;
}

std::vector<std::string> CompileOptions(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "-std=c++17", "--ptxas-options=-v", "-DNDEBUG"};
}

void ParsePtxasReport(const std::string& log, CompiledKernel* kernel) {
  static const std::regex kRegs("Used ([0-9]+) registers");
  static const std::regex kSpillStores("([0-9]+) bytes spill stores");
  static const std::regex kSpillLoads("([0-9]+) bytes spill loads");
  static const std::regex kStack("([0-9]+) bytes stack frame");
  kernel->registers = log.find("Used ") == std::string::npos ? -1 : FindInt(log, kRegs);
  kernel->spill_store_bytes = FindInt(log, kSpillStores);
  kernel->spill_load_bytes = FindInt(log, kSpillLoads);
  kernel->stack_bytes = FindInt(log, kStack);
}

absl::StatusOr<CompiledKernel> Compile(const CompileRequest& request) {
  auto api_or = GetNvrtc();
  if (!api_or.ok()) return api_or.status();
  const NvrtcApi& api = **api_or;
  const auto start = std::chrono::steady_clock::now();

  const auto& sources = EmbeddedSources();
  std::vector<std::string> names, texts;
  names.reserve(sources.size());
  texts.reserve(sources.size());
  for (const auto& s : sources) {
    names.emplace_back(s.name);
    texts.emplace_back(s.text);
  }
  std::vector<const char*> name_ptrs, text_ptrs;
  for (size_t i = 0; i < names.size(); ++i) {
    name_ptrs.push_back(names[i].c_str());
    text_ptrs.push_back(texts[i].c_str());
  }

  nvrtcProgram prog = nullptr;
  nvrtcResult r =
      api.nvrtcCreateProgram(&prog, request.source.c_str(), (request.program_name + ".cu").c_str(),
                             static_cast<int>(names.size()), text_ptrs.data(), name_ptrs.data());
  if (r != NVRTC_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("nvrtcCreateProgram failed: ", api.nvrtcGetErrorString(r)));
  }
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram* prog;
    ~Destroy() { api.nvrtcDestroyProgram(prog); }
  } destroy{api, &prog};

  r = api.nvrtcAddNameExpression(prog, request.name_expression.c_str());
  if (r != NVRTC_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("nvrtcAddNameExpression failed: ", api.nvrtcGetErrorString(r)));
  }
  const std::vector<std::string> options = CompileOptions(request.arch);
  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());
  r = api.nvrtcCompileProgram(prog, static_cast<int>(option_ptrs.size()), option_ptrs.data());

  CompiledKernel out;
  size_t log_size = 0;
  api.nvrtcGetProgramLogSize(prog, &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    api.nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (r != NVRTC_SUCCESS) {
    if (r == NVRTC_ERROR_INVALID_OPTION) {
      return absl::FailedPreconditionError(
          absl::StrCat("NVRTC rejected the options for arch ", request.arch, ": ", out.log));
    }
    return absl::InternalError(absl::StrCat("NVRTC could not compile ", request.program_name,
                                            " for ", request.arch, ":\n", out.log,
                                            "\n--- generated source ---\n", request.source));
  }
  const char* lowered = nullptr;
  r = api.nvrtcGetLoweredName(prog, request.name_expression.c_str(), &lowered);
  if (r != NVRTC_SUCCESS || lowered == nullptr) {
    return absl::InternalError(absl::StrCat("no lowered name for ", request.name_expression));
  }
  out.lowered_name = lowered;
  size_t cubin_size = 0;
  api.nvrtcGetCUBINSize(prog, &cubin_size);
  out.cubin.resize(cubin_size);
  if (cubin_size == 0 || api.nvrtcGetCUBIN(prog, out.cubin.data()) != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("NVRTC produced no cubin for ", request.arch,
                                            " (a virtual compute_XX target?)"));
  }
  ParsePtxasReport(out.log, &out);
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace jitgemm::jit
