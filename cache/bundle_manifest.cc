#include "cache/bundle_manifest.h"

#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cache/entry_listing.h"
#include "cache/folder_trust.h"
#include "cache/json_fields.h"
#include "cache/log.h"

namespace jitgemm::cache {

std::string BundleManifest::ToJson() const {
  nlohmann::ordered_json j;
  j["format"] = format;
  j["created_by"] = created_by;
  j["created_at"] = created_at;
  j["library_version"] = library_version;
  j["selection"] = selection;
  j["manifests"] = manifests;
  nlohmann::ordered_json keys = nlohmann::ordered_json::object();
  for (const auto& [field, values] : key_fields) keys[field] = values;
  j["keys"] = keys;
  j["entries"] = entries;
  j["bytes"] = bytes;
  nlohmann::ordered_json kinds_json = nlohmann::ordered_json::object();
  for (const auto& [kind, t] : kinds) {
    kinds_json[kind] = {{"entries", t.entries}, {"bytes", t.bytes}};
  }
  j["kinds"] = kinds_json;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& [path, file] : files) {
    list.push_back({{"path", path}, {"bytes", file.bytes}, {"xxh3", file.checksum}});
  }
  j["files"] = list;
  // Replace, not throw, on invalid UTF-8 (a manifest name from the command line).
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

absl::StatusOr<BundleManifest> BundleManifest::FromJson(std::string_view json) {
  constexpr char kWhere[] = "bundle manifest";
  absl::StatusOr<Json> parsed =
      ParseBoundedJson(json, {kMaxBundleManifestBytes, kMaxBundleManifestDepth}, kWhere);
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  if (!j.is_object()) return absl::InvalidArgumentError("bundle manifest: not a JSON object");
  absl::Status s =
      CheckKnownFields(j,
                       {"format", "created_by", "created_at", "library_version", "selection",
                        "manifests", "keys", "entries", "bytes", "kinds", "files"},
                       kWhere);
  BundleManifest m;
  for (auto [field, out, required] :
       {std::tuple{"format", &m.format, true}, std::tuple{"created_by", &m.created_by, false},
        std::tuple{"created_at", &m.created_at, false},
        std::tuple{"library_version", &m.library_version, false},
        std::tuple{"selection", &m.selection, false}}) {
    if (s.ok()) s = GetJsonString(j, field, required, kWhere, out);
  }
  if (!s.ok()) return s;
  if (m.format != kBundleFormat) {
    return absl::InvalidArgumentError(absl::StrCat("bundle manifest: field 'format' is \"",
                                                   m.format, "\", not \"", kBundleFormat, "\""));
  }
  if (j.contains("manifests")) s = GetJsonStringList(j["manifests"], "manifests", &m.manifests);
  if (s.ok() && j.contains("keys")) {
    if (!j["keys"].is_object()) return absl::InvalidArgumentError("keys is not an object");
    for (const auto& [field, values] : j["keys"].items()) {
      if (s.ok()) s = GetJsonStringList(values, absl::StrCat("keys.", field), &m.key_fields[field]);
    }
  }
  if (s.ok()) s = GetJsonCount(j, "entries", false, kWhere, &m.entries);
  if (s.ok()) s = GetJsonCount(j, "bytes", false, kWhere, &m.bytes);
  if (s.ok() && j.contains("kinds")) {
    if (!j["kinds"].is_object()) return absl::InvalidArgumentError("kinds is not an object");
    for (const auto& [kind, t] : j["kinds"].items()) {
      const std::string where = absl::StrCat("kinds.", kind);
      if (!t.is_object()) return absl::InvalidArgumentError(where + " is not an object");
      KindTotals& totals = m.kinds[kind];
      if (s.ok()) s = CheckKnownFields(t, {"entries", "bytes"}, where);
      if (s.ok()) s = GetJsonCount(t, "entries", false, where, &totals.entries);
      if (s.ok()) s = GetJsonCount(t, "bytes", false, where, &totals.bytes);
    }
  }
  if (!s.ok()) return s;
  if (!j.contains("files"))
    return absl::InvalidArgumentError("bundle manifest: missing field 'files'");
  if (!j["files"].is_array()) return absl::InvalidArgumentError("files is not an array");
  for (size_t i = 0; i < j["files"].size(); ++i) {
    const Json& f = j["files"][i];
    const std::string where = absl::StrCat("files[", i, "]");
    if (!f.is_object()) return absl::InvalidArgumentError(where + " is not an object");
    std::string path, checksum;
    BundleFile file;
    s = CheckKnownFields(f, {"path", "bytes", "xxh3"}, where);
    if (s.ok()) s = GetJsonString(f, "path", true, where, &path);
    if (s.ok()) s = GetJsonCount(f, "bytes", true, where, &file.bytes);
    if (s.ok()) s = GetJsonString(f, "xxh3", true, where, &file.checksum);
    if (!s.ok()) return s;
    if (!ParseEntryRelativePath(path)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has a bad path ", QuotedForHumans(path)));
    }
    if (!m.files.emplace(path, std::move(file)).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, " repeats ", QuotedForHumans(path)));
    }
  }
  return m;
}

absl::StatusOr<BundleManifestFiles> ReadBundleManifestFiles(Env* env, const std::string& dir) {
  BundleManifestFiles out;
  for (const char* name : {kBundleSignatureFile, kBundleManifestFile}) {
    const bool is_signature = name == std::string(kBundleSignatureFile);
    const std::string path = JoinPath(dir, name);
    absl::StatusOr<std::vector<FileInfo>> infos =
        CheckTrustedFolders(env, dir, name, RootUse::kReadOnly, /*last_is_file=*/true);
    if (!infos.ok()) return infos.status();
    if (infos->size() != 2) {
      if (is_signature) continue;  // unsigned
      return absl::NotFoundError(absl::StrCat(QuotedForHumans(path), " does not exist"));
    }
    absl::Status s = CheckTrustedFile(infos->back(), path, RootUse::kReadOnly, infos->front().uid);
    if (!s.ok()) return s;
    absl::StatusOr<std::string> text = env->ReadFile(path, kMaxBundleManifestBytes);
    if (!text.ok()) return text.status();
    (is_signature ? out.signature.emplace() : out.manifest) = std::move(text).value();
  }
  return out;
}

std::string BundleReadme(const BundleManifest& m) {
  auto list = [&](const char* field) {
    auto it = m.key_fields.find(field);
    return it == m.key_fields.end() || it->second.empty() ? std::string("-")
                                                          : absl::StrJoin(it->second, ", ");
  };
  auto kind = [&](const char* name) {
    auto it = m.kinds.find(name);
    return it == m.kinds.end() ? KindTotals{} : it->second;
  };
  std::string out = absl::StrCat(
      "jitgemm kernel cache bundle\n"
      "===========================\n\n"
      "Created by ",
      m.created_by, " (jitgemm ", m.library_version, ") at ", m.created_at, ".\n",
      "Selection: ", m.selection, "\n");
  if (!m.manifests.empty())
    absl::StrAppend(&out, "Manifests: ", absl::StrJoin(m.manifests, ", "), "\n");
  absl::StrAppend(&out, "Contents: ", kind("cubin").entries, " compiled kernels (",
                  kind("cubin").bytes, " bytes), ", kind("tuning").entries, " tuning records (",
                  kind("tuning").bytes, " bytes).\n", "Keys made for: arch ", list("arch"),
                  "; NVRTC ", list("nvrtc"), "; library ABI ", list("abi"), "; kernel sources ",
                  list("sources"), ".\n\n");
  absl::StrAppend(
      &out,
      "This directory has the layout of a jitgemm cache root. A process uses it, read-only,\n"
      "with\n\n"
      "    export JITGEMM_CACHE_READONLY_DIRS=/path/to/this/directory\n"
      "    export JITGEMM_JIT=off    # optional: never compile at run time\n\n"
      "A kernel is found only by a process whose arch, NVRTC version (or\n"
      "JITGEMM_NVRTC_VERSION), library ABI and kernel sources are the ones above.\n\n"
      "Check it:                      jitgemm-cache verify-bundle --from=<this directory>\n"
      "Copy it into a writable cache: jitgemm-cache import --from=<this directory>\n\n",
      kBundleManifestFile,
      " lists every entry with its size and XXH3-64 checksum.\n"
      "See docs/deploying.md in the jitgemm sources.\n");
  return out;
}

}  // namespace jitgemm::cache
