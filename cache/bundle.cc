#include "cache/bundle.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cache/layout.h"
#include "cache/shard_walk.h"
#include "cache/ustar.h"
#include "nlohmann/json.hpp"

namespace jitgemm::cache {
namespace {

// "v1/<kind>/<2 hex>/<32 hex>.bin", whether or not the shard matches the name.
std::optional<EntryKind> LooksLikeEntryPath(absl::string_view relative_path) {
  std::vector<absl::string_view> parts = absl::StrSplit(relative_path, '/');
  if (parts.size() != 4 || parts[0] != kLayoutDir || !IsShardName(parts[2]) ||
      !IsEntryFileName(parts[3])) {
    return std::nullopt;
  }
  for (EntryKind kind : kAllEntryKinds) {
    if (parts[1] == EntryKindName(kind)) return kind;
  }
  return std::nullopt;
}

std::string FormatUtc(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// ------------------------------------------------------------ sources

// Where entries are read from: a cache root, a bundle directory, an archive.
class Source {
 public:
  virtual ~Source() = default;
  const std::vector<EntryFileInfo>& entries() const { return entries_; }
  virtual absl::StatusOr<std::string> Read(const EntryFileInfo& entry) const = 0;

  // CheckEntryFile, then (for a bundle with a manifest) the listing: NotFound
  // if the entry is not listed, DataLoss if it differs from its listing.
  absl::StatusOr<EntryView> Check(const EntryFileInfo& entry, std::string_view bytes) const {
    absl::StatusOr<EntryView> view = CheckEntryFile(entry.relative_path, bytes);
    if (!view.ok() || !manifest_.has_value()) return view;
    auto it = manifest_->files.find(entry.relative_path);
    if (it == manifest_->files.end()) {
      return absl::NotFoundError(absl::StrCat("not listed in ", kBundleManifestFile));
    }
    if (it->second.bytes != bytes.size() || it->second.checksum != EntryChecksumHex(bytes)) {
      return absl::DataLossError(absl::StrFormat(
          "sound by itself, but differs from %s (%d bytes, checksum %s; listed: %d bytes, %s)",
          kBundleManifestFile, bytes.size(), EntryChecksumHex(bytes), it->second.bytes,
          it->second.checksum));
    }
    return view;
  }

  bool archive() const { return archive_; }
  const std::optional<BundleManifest>& manifest() const { return manifest_; }
  const std::string& manifest_error() const { return manifest_error_; }
  const std::vector<std::string>& ignored() const { return ignored_; }

 protected:
  void SetManifest(absl::StatusOr<std::string> text) {
    if (absl::IsNotFound(text.status())) {
      manifest_error_ = absl::StrCat("no ", kBundleManifestFile, " (not a bundle)");
      return;
    }
    if (!text.ok()) {
      manifest_error_ = absl::StrCat(kBundleManifestFile, ": ", text.status().message());
      return;
    }
    absl::StatusOr<BundleManifest> m = BundleManifest::FromJson(*text);
    if (m.ok()) {
      manifest_ = std::move(m).value();
    } else {
      manifest_error_ = absl::StrCat(kBundleManifestFile, ": ", m.status().message());
    }
  }

  std::vector<EntryFileInfo> entries_;
  bool archive_ = false;
  std::optional<BundleManifest> manifest_;
  std::string manifest_error_;
  std::vector<std::string> ignored_;
};

class DirSource : public Source {
 public:
  static absl::StatusOr<std::unique_ptr<Source>> Open(Env* env, const std::string& dir,
                                                      bool is_bundle) {
    absl::StatusOr<FileInfo> info = env->Stat(dir);
    if (!info.ok()) return info.status();
    if (!info->is_directory) {
      return absl::FailedPreconditionError(absl::StrCat("'", dir, "' is not a directory"));
    }
    std::unique_ptr<DirSource> source(new DirSource(env));
    absl::StatusOr<std::vector<EntryFileInfo>> entries = ListEntryFiles(env, dir);
    if (!entries.ok()) return entries.status();
    source->entries_ = std::move(entries).value();
    if (is_bundle) {
      source->SetManifest(env->ReadFile(JoinPath(dir, kBundleManifestFile), kMaxEntryFileBytes));
    }
    return std::unique_ptr<Source>(std::move(source));
  }

  absl::StatusOr<std::string> Read(const EntryFileInfo& entry) const override {
    return env_->ReadFile(entry.path, kMaxEntryFileBytes);
  }

 private:
  explicit DirSource(Env* env) : env_(env) {}
  Env* const env_;
};

class TarSource : public Source {
 public:
  static absl::StatusOr<std::unique_ptr<Source>> Open(const std::string& path) {
    absl::StatusOr<std::unique_ptr<TarReader>> reader = TarReader::Open(path, kMaxEntryFileBytes);
    if (!reader.ok()) return reader.status();
    std::unique_ptr<TarSource> source(new TarSource(std::move(reader).value()));
    source->archive_ = true;
    absl::StatusOr<std::string> manifest = absl::NotFoundError("absent");
    for (size_t i = 0; i < source->reader_->members().size(); ++i) {
      const TarMember& m = source->reader_->members()[i];
      if (m.is_directory) continue;
      if (m.name == kBundleManifestFile) {
        manifest = source->reader_->Read(m);
      } else if (std::optional<EntryKind> kind = LooksLikeEntryPath(m.name)) {
        EntryFileInfo e;
        e.kind = *kind;
        e.relative_path = m.name;
        e.path = absl::StrCat(path, ":", m.name);
        e.size = m.size;
        source->member_of_[m.name] = i;
        source->entries_.push_back(std::move(e));
      } else if (m.name != kBundleReadmeFile) {
        source->ignored_.push_back(m.name);
      }
    }
    std::sort(source->entries_.begin(), source->entries_.end(),
              [](const EntryFileInfo& a, const EntryFileInfo& b) {
                return a.relative_path < b.relative_path;
              });
    source->SetManifest(std::move(manifest));
    return std::unique_ptr<Source>(std::move(source));
  }

  absl::StatusOr<std::string> Read(const EntryFileInfo& entry) const override {
    return reader_->Read(reader_->members()[member_of_.at(entry.relative_path)]);
  }

 private:
  explicit TarSource(std::unique_ptr<TarReader> reader) : reader_(std::move(reader)) {}
  std::unique_ptr<TarReader> reader_;
  std::map<std::string, size_t> member_of_;
};

absl::StatusOr<std::unique_ptr<Source>> OpenBundle(Env* env, const std::string& from) {
  if (IsArchivePath(from)) return TarSource::Open(from);
  return DirSource::Open(env, from, /*is_bundle=*/true);
}

// ------------------------------------------------------------ sinks

class Sink {
 public:
  virtual ~Sink() = default;
  virtual absl::Status Add(const std::string& relative_path, std::string_view bytes) = 0;
  // Writes README.txt, then the manifest (last: its presence marks a whole bundle).
  virtual absl::Status Finish(const std::string& manifest, const std::string& readme) = 0;
};

absl::Status WriteWholeFile(Env* env, const std::string& path, std::string_view bytes) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(path);
  if (!file.ok()) return file.status();
  absl::Status s = (*file)->Append(absl::string_view(bytes.data(), bytes.size()));
  if (s.ok()) s = (*file)->Sync();
  absl::Status closed = (*file)->Close();
  if (s.ok()) s = closed;
  if (!s.ok()) env->RemoveFile(path).IgnoreError();
  return s;
}

class DirSink : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Create(Env* env, const std::string& out) {
    std::unique_ptr<DirSink> sink(new DirSink(env, out));
    absl::StatusOr<FileInfo> info = env->Stat(out);
    if (info.ok()) {
      if (!info->is_directory) {
        return absl::AlreadyExistsError(absl::StrCat("'", out, "' exists and is not a directory"));
      }
      absl::StatusOr<std::vector<std::string>> names = env->ListDir(out);
      if (!names.ok()) return names.status();
      if (!names->empty()) {
        return absl::AlreadyExistsError(absl::StrCat("'", out, "' exists and is not empty"));
      }
      sink->staging_ = out;  // written in place, manifest last
    } else if (absl::IsNotFound(info.status())) {
      sink->staging_ =
          absl::StrFormat("%s.partial.%d.%016x", out, env->ProcessId(), env->RandomBits());
      sink->rename_ = true;
      absl::Status made = env->CreateDirs(sink->staging_);
      if (!made.ok()) return made;
    } else {
      return info.status();
    }
    for (EntryKind kind : kAllEntryKinds) {
      absl::Status made = env->CreateDirs(KindDir(sink->staging_, kind));
      if (!made.ok()) return made;
    }
    return std::unique_ptr<Sink>(std::move(sink));
  }

  ~DirSink() override {
    if (rename_ && !finished_) {
      std::error_code ignored;
      std::filesystem::remove_all(staging_, ignored);
    }
  }

  absl::Status Add(const std::string& relative_path, std::string_view bytes) override {
    const std::string path = JoinPath(staging_, relative_path);
    const std::string dir = path.substr(0, path.rfind('/'));
    if (dirs_.insert(dir).second) {
      absl::Status made = env_->CreateDirs(dir);
      if (!made.ok()) return made;
    }
    return WriteWholeFile(env_, path, bytes);
  }

  absl::Status Finish(const std::string& manifest, const std::string& readme) override {
    absl::Status s = WriteWholeFile(env_, JoinPath(staging_, kBundleReadmeFile), readme);
    if (s.ok()) s = WriteWholeFile(env_, JoinPath(staging_, kBundleManifestFile), manifest);
    for (const std::string& dir : dirs_) {
      if (s.ok()) env_->SyncDir(dir).IgnoreError();
    }
    if (s.ok()) env_->SyncDir(staging_).IgnoreError();
    if (s.ok() && rename_) s = env_->RenameFile(staging_, out_);
    if (s.ok()) finished_ = true;
    return s;
  }

 private:
  DirSink(Env* env, std::string out) : env_(env), out_(std::move(out)) {}
  Env* const env_;
  const std::string out_;
  std::string staging_;
  bool rename_ = false;
  bool finished_ = false;
  std::set<std::string> dirs_;
};

class TarSink : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Create(Env* env, const std::string& out,
                                                      absl::Time mtime) {
    absl::StatusOr<std::unique_ptr<TarWriter>> writer = TarWriter::Create(env, out, mtime);
    if (!writer.ok()) return writer.status();
    std::unique_ptr<TarSink> sink(new TarSink(std::move(writer).value()));
    for (EntryKind kind : kAllEntryKinds) {
      absl::Status s =
          sink->writer_->AddDirectory(absl::StrCat(kLayoutDir, "/", EntryKindName(kind)));
      if (!s.ok()) return s;
    }
    return std::unique_ptr<Sink>(std::move(sink));
  }

  absl::Status Add(const std::string& relative_path, std::string_view bytes) override {
    return writer_->AddFile(relative_path, bytes);
  }

  absl::Status Finish(const std::string& manifest, const std::string& readme) override {
    absl::Status s = writer_->AddFile(kBundleReadmeFile, readme);
    if (s.ok()) s = writer_->AddFile(kBundleManifestFile, manifest);
    if (s.ok()) s = writer_->Finish();
    return s;
  }

 private:
  explicit TarSink(std::unique_ptr<TarWriter> writer) : writer_(std::move(writer)) {}
  std::unique_ptr<TarWriter> writer_;
};

// Folds one exported or verified entry into the manifest's totals.
void Account(const EntryFileInfo& entry, std::string_view bytes, const EntryView& view,
             const std::vector<std::string>& key_fields, BundleManifest* m,
             std::map<std::string, std::set<std::string>>* field_values) {
  m->files[entry.relative_path] = BundleFile{bytes.size(), EntryChecksumHex(bytes)};
  KindTotals& totals = m->kinds[EntryKindName(entry.kind)];
  ++totals.entries;
  totals.bytes += bytes.size();
  ++m->entries;
  m->bytes += bytes.size();
  for (const std::string& field : key_fields) {
    std::string value = KeyTextField(view.key_text, field);
    if (!value.empty()) (*field_values)[field].insert(std::move(value));
  }
}

// The shared walk of VerifyBundle and ImportBundle: `use` sees each sound entry.
template <class Use>
BundleVerifyReport WalkBundle(const Source& source, Use use) {
  BundleVerifyReport report;
  report.archive = source.archive();
  report.manifest = source.manifest();
  report.manifest_error = source.manifest_error();
  report.ignored = source.ignored();
  std::set<std::string> present;
  for (const EntryFileInfo& e : source.entries()) {
    ++report.entries;
    present.insert(e.relative_path);
    absl::StatusOr<std::string> bytes = source.Read(e);
    if (!bytes.ok()) {
      report.corrupt.push_back({e.path, std::string(bytes.status().message())});
      continue;
    }
    absl::StatusOr<EntryView> view = source.Check(e, *bytes);
    if (absl::IsNotFound(view.status())) {
      report.unlisted.push_back(e.path);
    } else if (!view.ok()) {
      report.corrupt.push_back({e.path, std::string(view.status().message())});
    } else {
      ++report.valid;
      report.bytes += bytes->size();
      use(e, *bytes, *view);
    }
  }
  if (report.manifest.has_value()) {
    for (const auto& [path, file] : report.manifest->files) {
      if (!present.count(path)) report.missing.push_back(path);
    }
  }
  return report;
}

}  // namespace

// ------------------------------------------------------------ helpers

bool IsArchivePath(absl::string_view path) { return absl::EndsWith(path, ".tar"); }

std::string EntryRelativePath(EntryKind kind, const CacheKey& key) {
  const std::string hex = key.Hex();
  return absl::StrCat(kLayoutDir, "/", EntryKindName(kind), "/", hex.substr(0, 2), "/", hex,
                      kEntrySuffix);
}

std::optional<EntryKind> ParseEntryRelativePath(absl::string_view relative_path) {
  std::optional<EntryKind> kind = LooksLikeEntryPath(relative_path);
  if (!kind) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(relative_path, '/');
  if (!absl::StartsWith(parts[3], parts[2])) return std::nullopt;
  return kind;
}

absl::StatusOr<std::vector<EntryFileInfo>> ListEntryFiles(Env* env, const std::string& root) {
  std::vector<EntryFileInfo> out;
  absl::Status walked = ForEachShard(
      env, root,
      [&](EntryKind kind, const std::string& dir, const std::vector<std::string>& names) {
        const std::string shard = dir.substr(dir.rfind('/') + 1);
        for (const std::string& name : names) {
          if (!IsEntryFileName(name)) continue;
          EntryFileInfo e;
          e.kind = kind;
          e.path = JoinPath(dir, name);
          e.relative_path =
              absl::StrCat(kLayoutDir, "/", EntryKindName(kind), "/", shard, "/", name);
          absl::StatusOr<FileInfo> info = env->Stat(e.path);
          if (!info.ok()) continue;  // gone meanwhile (evicted, replaced)
          e.size = info->size;
          e.mtime = info->mtime;
          out.push_back(std::move(e));
        }
      });
  if (!walked.ok()) return walked;
  std::sort(out.begin(), out.end(), [](const EntryFileInfo& a, const EntryFileInfo& b) {
    return a.relative_path < b.relative_path;
  });
  return out;
}

absl::StatusOr<EntryView> CheckEntryFile(absl::string_view relative_path, std::string_view bytes) {
  std::optional<EntryKind> kind = LooksLikeEntryPath(relative_path);
  if (!kind) {
    return absl::DataLossError(absl::StrCat("'", relative_path, "' is not an entry path"));
  }
  absl::StatusOr<EntryView> view = ParseEntry(bytes);
  if (!view.ok()) return view.status();
  if (view->kind != *kind) {
    return absl::DataLossError(absl::StrCat("holds a ", EntryKindName(view->kind), " entry in the ",
                                            EntryKindName(*kind), " directory"));
  }
  const std::string hex = MakeCacheKey(std::string(view->key_text)).Hex();
  std::vector<absl::string_view> parts = absl::StrSplit(relative_path, '/');
  if (parts[3] != absl::StrCat(hex, kEntrySuffix)) {
    return absl::DataLossError(
        "its file name is not the hash of its key text (a renamed or swapped file)");
  }
  if (parts[2] != hex.substr(0, 2)) {
    return absl::DataLossError("it is in the wrong shard directory");
  }
  return view;
}

std::string EntryChecksumHex(std::string_view bytes) {
  uint64_t sum = 0;
  if (bytes.size() >= kEntryTrailerBytes) {
    for (size_t i = 0; i < kEntryTrailerBytes; ++i) {
      sum |= uint64_t{static_cast<unsigned char>(bytes[bytes.size() - kEntryTrailerBytes + i])}
             << (8 * i);
    }
  }
  return absl::StrFormat("%016x", sum);
}

std::string KeyTextField(std::string_view key_text, std::string_view field) {
  const std::string prefix = absl::StrCat(absl::string_view(field.data(), field.size()), "=");
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(key_text.data(), key_text.size()), '\n')) {
    if (absl::ConsumePrefix(&line, prefix)) return std::string(line);
  }
  return "";
}

absl::StatusOr<RootVerifyReport> VerifyRoot(Env* env, const std::string& root) {
  absl::StatusOr<std::vector<EntryFileInfo>> entries = ListEntryFiles(env, root);
  if (!entries.ok()) return entries.status();
  RootVerifyReport report;
  for (const EntryFileInfo& e : *entries) {
    absl::StatusOr<std::string> bytes = env->ReadFile(e.path, kMaxEntryFileBytes);
    if (absl::IsNotFound(bytes.status())) continue;  // evicted meanwhile
    ++report.entries;
    absl::Status s = bytes.status();
    if (s.ok()) s = CheckEntryFile(e.relative_path, *bytes).status();
    if (s.ok()) {
      ++report.valid;
      report.bytes += bytes->size();
    } else {
      report.corrupt.push_back({e.path, std::string(s.message())});
    }
  }
  return report;
}

// ------------------------------------------------------------ manifest

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
  using Json = nlohmann::json;
  Json j = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError("not a JSON object");
  auto bad = [](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("field \"", field, "\" ", why));
  };
  BundleManifest m;
  auto get_string = [&](const char* field, std::string* out, bool required) -> absl::Status {
    if (!j.contains(field)) return required ? bad(field, "is missing") : absl::OkStatus();
    if (!j[field].is_string()) return bad(field, "is not a string");
    *out = j[field].get<std::string>();
    return absl::OkStatus();
  };
  auto get_count = [&](const Json& parent, const char* field, uint64_t* out) -> absl::Status {
    if (!parent.contains(field)) return absl::OkStatus();
    if (!parent[field].is_number_unsigned()) return bad(field, "is not a count");
    *out = parent[field].get<uint64_t>();
    return absl::OkStatus();
  };
  for (auto [field, out, required] :
       {std::tuple{"format", &m.format, true}, std::tuple{"created_by", &m.created_by, false},
        std::tuple{"created_at", &m.created_at, false},
        std::tuple{"library_version", &m.library_version, false},
        std::tuple{"selection", &m.selection, false}}) {
    absl::Status s = get_string(field, out, required);
    if (!s.ok()) return s;
  }
  if (m.format != kBundleFormat) {
    return bad("format", absl::StrCat("is \"", m.format, "\", not \"", kBundleFormat, "\""));
  }
  auto string_list = [&](const Json& v, absl::string_view field,
                         std::vector<std::string>* out) -> absl::Status {
    if (!v.is_array()) return bad(field, "is not an array");
    for (const Json& s : v) {
      if (!s.is_string()) return bad(field, "holds a non-string");
      out->push_back(s.get<std::string>());
    }
    return absl::OkStatus();
  };
  if (j.contains("manifests")) {
    absl::Status s = string_list(j["manifests"], "manifests", &m.manifests);
    if (!s.ok()) return s;
  }
  if (j.contains("keys")) {
    if (!j["keys"].is_object()) return bad("keys", "is not an object");
    for (const auto& [field, values] : j["keys"].items()) {
      absl::Status s = string_list(values, absl::StrCat("keys.", field), &m.key_fields[field]);
      if (!s.ok()) return s;
    }
  }
  for (auto [field, out] : {std::pair{"entries", &m.entries}, std::pair{"bytes", &m.bytes}}) {
    absl::Status s = get_count(j, field, out);
    if (!s.ok()) return s;
  }
  if (j.contains("kinds")) {
    if (!j["kinds"].is_object()) return bad("kinds", "is not an object");
    for (const auto& [kind, t] : j["kinds"].items()) {
      if (!t.is_object()) return bad(absl::StrCat("kinds.", kind), "is not an object");
      KindTotals& totals = m.kinds[kind];
      absl::Status s = get_count(t, "entries", &totals.entries);
      if (s.ok()) s = get_count(t, "bytes", &totals.bytes);
      if (!s.ok()) return s;
    }
  }
  if (!j.contains("files")) return bad("files", "is missing");
  if (!j["files"].is_array()) return bad("files", "is not an array");
  for (size_t i = 0; i < j["files"].size(); ++i) {
    const Json& f = j["files"][i];
    const std::string where = absl::StrCat("files[", i, "]");
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("bytes") ||
        !f["bytes"].is_number_unsigned() || !f.contains("xxh3") || !f["xxh3"].is_string()) {
      return bad(where, "needs a string \"path\", a count \"bytes\" and a string \"xxh3\"");
    }
    const std::string path = f["path"].get<std::string>();
    if (!ParseEntryRelativePath(path))
      return bad(where, absl::StrCat("has a bad path '", path, "'"));
    if (!m.files.emplace(path, BundleFile{f["bytes"].get<uint64_t>(), f["xxh3"].get<std::string>()})
             .second) {
      return bad(where, absl::StrCat("repeats '", path, "'"));
    }
  }
  return m;
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

// ------------------------------------------------------------ operations

absl::StatusOr<ExportReport> ExportBundle(const ExportRequest& request, Env* env) {
  if (request.out.empty()) return absl::InvalidArgumentError("no output given");
  std::vector<std::unique_ptr<Source>> sources;
  if (!request.from.empty()) {
    absl::StatusOr<std::unique_ptr<Source>> s = OpenBundle(env, request.from);
    if (!s.ok()) return s.status();
    sources.push_back(std::move(s).value());
  } else {
    for (const std::string& root : request.roots) {
      if (root == request.out) {
        return absl::InvalidArgumentError(absl::StrCat("'", root, "' is both source and output"));
      }
      absl::StatusOr<std::unique_ptr<Source>> s = DirSource::Open(env, root, false);
      if (absl::IsNotFound(s.status())) continue;  // an unused root holds nothing
      if (!s.ok()) return s.status();
      sources.push_back(std::move(s).value());
    }
  }

  // Candidates in path order, sources in search order within one path.
  std::map<std::string, const CacheKey*> wanted;  // relative path -> key
  for (const auto& [kind, key] : request.keys) wanted[EntryRelativePath(kind, key)] = &key;
  struct Candidate {
    const EntryFileInfo* entry;
    const Source* source;
  };
  std::vector<Candidate> candidates;
  for (const auto& source : sources) {
    for (const EntryFileInfo& e : source->entries()) {
      const bool take = request.all || wanted.count(e.relative_path) ||
                        (e.kind == EntryKind::kTuningRecord && request.tuning_filter);
      if (take) candidates.push_back({&e, source.get()});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return a.entry->relative_path < b.entry->relative_path;
                   });

  ExportReport report;
  report.out = request.out;
  report.archive = IsArchivePath(request.out);
  absl::StatusOr<std::unique_ptr<Sink>> sink =
      report.archive ? TarSink::Create(env, request.out, request.created_at)
                     : DirSink::Create(env, request.out);
  if (!sink.ok()) return sink.status();

  BundleManifest& m = report.manifest;
  std::map<std::string, std::set<std::string>> field_values;
  std::set<std::string> done;
  for (const Candidate& c : candidates) {
    const EntryFileInfo& e = *c.entry;
    if (done.count(e.relative_path)) continue;
    absl::StatusOr<std::string> bytes = c.source->Read(e);
    if (absl::IsNotFound(bytes.status())) continue;  // evicted since the listing
    absl::StatusOr<EntryView> view =
        bytes.ok() ? c.source->Check(e, *bytes) : absl::StatusOr<EntryView>(bytes.status());
    if (view.ok() && !request.all) {
      auto it = wanted.find(e.relative_path);
      if (it != wanted.end()) {
        if (view->key_text != it->second->text) {
          view = absl::DataLossError("its key text differs from the one asked for");
        }
      } else if (!request.tuning_filter(view->key_text)) {
        continue;
      }
    }
    if (!view.ok()) {
      report.corrupt.push_back({e.path, std::string(view.status().message())});
      continue;
    }
    absl::Status added = (*sink)->Add(e.relative_path, *bytes);
    if (!added.ok()) return added;
    Account(e, *bytes, *view, request.key_fields, &m, &field_values);
    done.insert(e.relative_path);
  }
  for (const auto& [path, key] : wanted) {
    if (!done.count(path)) report.missing.push_back(key->Hex());
  }
  m.created_by = request.created_by;
  m.created_at = FormatUtc(request.created_at);
  m.library_version = request.library_version;
  m.selection = request.selection;
  m.manifests = request.manifests;
  for (auto& [field, values] : field_values) {
    m.key_fields[field] = std::vector<std::string>(values.begin(), values.end());
  }
  for (EntryKind kind : kAllEntryKinds) m.kinds[EntryKindName(kind)];  // zeros listed too
  absl::Status finished = (*sink)->Finish(m.ToJson(), BundleReadme(m));
  if (!finished.ok()) return finished;
  return report;
}

absl::StatusOr<BundleVerifyReport> VerifyBundle(const std::string& from, Env* env) {
  absl::StatusOr<std::unique_ptr<Source>> source = OpenBundle(env, from);
  if (!source.ok()) return source.status();
  return WalkBundle(**source, [](const EntryFileInfo&, std::string_view, const EntryView&) {});
}

absl::StatusOr<ImportReport> ImportBundle(const std::string& from, DiskCache& cache, Env* env) {
  if (cache.mode() != CacheMode::kReadWrite) {
    return absl::FailedPreconditionError(absl::StrCat("the cache '", cache.root(), "' is ",
                                                      CacheModeName(cache.mode()),
                                                      ", not readwrite: nothing can be imported"));
  }
  absl::StatusOr<std::unique_ptr<Source>> source = OpenBundle(env, from);
  if (!source.ok()) return source.status();
  ImportReport report;
  report.verify = WalkBundle(
      **source, [&](const EntryFileInfo& e, std::string_view bytes, const EntryView& view) {
        const CacheKey key = MakeCacheKey(std::string(view.key_text));
        absl::StatusOr<std::string> existing =
            env->ReadFile(EntryPath(cache.root(), view.kind, key), kMaxEntryFileBytes);
        if (existing.ok() && DecodeEntry(*existing, key, view.kind).ok()) {
          ++report.already_present;
          return;
        }
        const CacheCounters before = cache.counters();
        cache.Store(key, view.kind, view.payload);
        const CacheCounters after = cache.counters();
        if (after.store_failures > before.store_failures) {
          ++report.store_failures;
        } else if (after.stores > before.stores) {
          ++report.imported;
          report.imported_bytes += bytes.size();
        } else {
          ++report.already_present;  // another writer published it meanwhile
        }
      });
  return report;
}

}  // namespace jitgemm::cache
