#include "jit/source_closure.h"

#include <xxhash.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace jitgemm::jit {
namespace {

const EmbeddedSource* Find(const std::vector<EmbeddedSource>& sources, std::string_view name) {
  for (const EmbeddedSource& s : sources) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> QuotedIncludes(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos || line.substr(i, 7) != "include") continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string_view::npos || line[i] != '"') continue;
    const size_t close = line.find('"', i + 1);
    if (close == std::string_view::npos) continue;
    out.emplace_back(line.substr(i + 1, close - i - 1));
  }
  return out;
}

std::vector<std::string> IncludedSources(std::string_view text,
                                         const std::vector<EmbeddedSource>& sources) {
  std::set<std::string> seen;
  std::vector<std::string> pending = QuotedIncludes(text);
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    const EmbeddedSource* src = Find(sources, name);
    if (src == nullptr || !seen.insert(name).second) continue;
    for (std::string& next : QuotedIncludes(src->text)) pending.push_back(std::move(next));
  }
  return {seen.begin(), seen.end()};
}

std::string IncludedSourcesHash(std::string_view text, const std::vector<EmbeddedSource>& sources) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const std::string& name : IncludedSources(text, sources)) {
    const EmbeddedSource* src = Find(sources, name);
    XXH3_64bits_update(state, src->name.data(), src->name.size());
    XXH3_64bits_update(state, "\0", 1);
    XXH3_64bits_update(state, src->text.data(), src->text.size());
    XXH3_64bits_update(state, "\0", 1);
  }
  std::string hash = absl::StrFormat("%016x", XXH3_64bits_digest(state));
  XXH3_freeState(state);
  return hash;
}

std::string KernelSourcesHash(std::string_view translation_unit) {
  // A generated unit includes one family header: few distinct keys.
  ABSL_CONST_INIT static absl::Mutex mu(absl::kConstInit);
  static auto* memo = new absl::flat_hash_map<std::string, std::string>();  // guarded by mu
  const std::string includes = absl::StrJoin(QuotedIncludes(translation_unit), "\n");
  absl::MutexLock lock(&mu);
  auto it = memo->find(includes);
  if (it == memo->end()) {
    it = memo->emplace(includes, IncludedSourcesHash(translation_unit, EmbeddedSources())).first;
  }
  return it->second;
}

const std::set<std::string>& AllKernelSourcesHashes() {
  static const std::set<std::string>* const kAll = [] {
    auto* all = new std::set<std::string>();
    for (const EmbeddedSource& s : EmbeddedSources()) {
      all->insert(KernelSourcesHash("#include \"" + std::string(s.name) + "\"\n"));
    }
    return all;
  }();
  return *kAll;
}

}  // namespace jitgemm::jit
