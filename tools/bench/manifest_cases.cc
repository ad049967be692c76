#include "tools/bench/manifest_cases.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/src/manifest.h"

namespace jitgemm::bench {
namespace {

void AppendValues(absl::string_view value, std::vector<std::string>& out) {
  for (absl::string_view v : absl::StrSplit(value, ',', absl::SkipEmpty())) out.emplace_back(v);
}

// "dir/recorded.json" -> "recorded".
absl::string_view BaseName(absl::string_view path) {
  const size_t slash = path.find_last_of('/');
  if (slash != absl::string_view::npos) path.remove_prefix(slash + 1);
  if (path.size() > 5 && path.substr(path.size() - 5) == ".json") path.remove_suffix(5);
  return path;
}

// The flag text of argv[i] without its dashes; empty for "--" and operands.
absl::string_view FlagText(absl::string_view arg) {
  if (arg.rfind("--", 0) == 0) return arg.substr(2);
  if (arg.rfind("-", 0) == 0) return arg.substr(1);
  return {};
}

}  // namespace

bool FlagGiven(int argc, const char* const* argv, absl::string_view name) {
  for (int i = 1; i < argc && absl::string_view(argv[i]) != "--"; ++i) {
    const absl::string_view arg = FlagText(argv[i]);
    if (arg.rfind(name, 0) == 0 && (arg.size() == name.size() || arg[name.size()] == '=')) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> ManifestFlagValues(int argc, const char* const* argv) {
  std::vector<std::string> values;
  for (int i = 1; i < argc && absl::string_view(argv[i]) != "--"; ++i) {
    const absl::string_view arg = FlagText(argv[i]);
    if (arg == "manifest" && i + 1 < argc) {
      AppendValues(argv[++i], values);
    } else if (arg.rfind("manifest=", 0) == 0) {
      AppendValues(arg.substr(9), values);
    }
  }
  return values;
}

absl::StatusOr<std::vector<BenchCase>> ManifestTextCases(const std::string& json,
                                                         absl::string_view name) {
  absl::StatusOr<Manifest> manifest = ParseManifest(json);
  if (!manifest.ok()) return manifest.status();
  std::vector<BenchCase> cases;
  for (size_t i = 0; i < manifest->problems.size(); ++i) {
    const ManifestEntry& entry = manifest->problems[i];
    const absl::Status valid = ValidateProblem(entry.problem);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("problems[", i, "] (", entry.name, "): ", valid.message()));
    }
    BenchCase c;
    c.suite = absl::StrCat("manifest:", name);
    c.problem = Canonicalize(entry.problem);
    c.label = entry.name.empty() ? DebugString(c.problem)
                                 : absl::StrCat(entry.name, " (", DebugString(c.problem), ")");
    c.impls = ColumnsFor(c.problem);
    c.options = manifest->OptionsOf(entry);
    cases.push_back(std::move(c));
  }
  return cases;
}

absl::StatusOr<std::vector<BenchCase>> ManifestFileCases(const std::string& path) {
  absl::StatusOr<std::string> text = ReadManifestFile(path);
  absl::StatusOr<std::vector<BenchCase>> cases =
      text.ok() ? ManifestTextCases(*text, BaseName(path)) : text.status();
  if (!cases.ok()) {
    return absl::Status(cases.status().code(), absl::StrCat(path, ": ", cases.status().message()));
  }
  return cases;
}

}  // namespace jitgemm::bench
