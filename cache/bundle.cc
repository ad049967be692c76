#include "cache/bundle.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cache/bundle_io.h"
#include "cache/bundle_signature.h"
#include "cache/layout.h"
#include "cache/log.h"

namespace jitgemm::cache {
namespace {

std::string FormatUtc(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

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

// Fills the report's signature fields; with `keys`, a missing or bad
// signature is an error there.
void CheckSignature(const Source& source, const TrustedKeys* keys, BundleVerifyReport* report) {
  if (!source.signature().has_value()) {
    report->signature = "unsigned";
    if (keys != nullptr) {
      report->signature_error = absl::StrCat("it is not signed (no ", kBundleSignatureFile,
                                             ") and JITGEMM_CACHE_TRUSTED_KEYS is set");
    }
    return;
  }
  const std::vector<absl::string_view> fields = absl::StrSplit(*source.signature(), ' ');
  report->signature = fields.size() >= 3 ? absl::StrCat("signed by ed25519 ", fields[2])
                                         : std::string("a malformed signature");
  if (keys == nullptr) return;
  if (!source.manifest().has_value()) {
    report->signature_error = "its manifest is unreadable, so its signature cannot be checked";
    return;
  }
  absl::Status verified = keys->Verify(source.manifest_text(), *source.signature());
  if (verified.ok()) {
    absl::StrAppend(&report->signature, " (trusted here)");
  } else {
    report->signature_error = std::string(verified.message());
  }
}

}  // namespace

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
      absl::StatusOr<std::unique_ptr<Source>> s = OpenDirSource(env, root, false);
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
  absl::StatusOr<std::unique_ptr<Sink>> sink = CreateSink(env, request.out, request.created_at);
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
  const std::string manifest = m.ToJson();
  std::string signature;
  if (!request.sign_key_pem.empty()) {
    absl::StatusOr<std::string> signed_text = SignManifest(manifest, request.sign_key_pem);
    if (!signed_text.ok()) return signed_text.status();
    signature = std::move(signed_text).value();
  }
  absl::Status finished = (*sink)->Finish(manifest, BundleReadme(m), signature);
  if (!finished.ok()) return finished;
  return report;
}

absl::StatusOr<BundleVerifyReport> VerifyBundle(const std::string& from, Env* env,
                                                const TrustedKeys* keys) {
  absl::StatusOr<std::unique_ptr<Source>> source = OpenBundle(env, from);
  if (!source.ok()) return source.status();
  BundleVerifyReport report =
      WalkBundle(**source, [](const EntryFileInfo&, std::string_view, const EntryView&) {});
  CheckSignature(**source, keys, &report);
  return report;
}

absl::StatusOr<ImportReport> ImportBundle(const std::string& from, DiskCache& cache, Env* env) {
  if (cache.mode() != CacheMode::kReadWrite) {
    return absl::FailedPreconditionError(absl::StrCat("the cache '", cache.root(), "' is ",
                                                      CacheModeName(cache.mode()),
                                                      ", not readwrite: nothing can be imported"));
  }
  absl::StatusOr<std::unique_ptr<Source>> source = OpenBundle(env, from);
  if (!source.ok()) return source.status();
  // Without its manifest nothing says which entries belong to the bundle:
  // a damaged one (unparsable, a link, a FIFO, too large) stops the import.
  // Only a directory with no manifest at all (a copied cache root) goes on.
  if (!(*source)->manifest().has_value() && !(*source)->manifest_absent()) {
    return absl::DataLossError(absl::StrCat("not importing from ", QuotedForHumans(from), ": ",
                                            (*source)->manifest_error()));
  }
  if (const TrustedKeys* keys = cache.trusted_keys(); keys != nullptr) {
    BundleVerifyReport signature;
    CheckSignature(**source, keys, &signature);
    if (!signature.signature_error.empty()) {
      return absl::PermissionDeniedError(absl::StrCat("not importing from ", QuotedForHumans(from),
                                                      ": ", signature.signature_error));
    }
  }
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
