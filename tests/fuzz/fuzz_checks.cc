#include "tests/fuzz/fuzz_checks.h"

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "api/src/manifest.h"
#include "cache/bundle_manifest.h"
#include "cache/entry.h"
#include "cache/entry_listing.h"
#include "cache/key.h"
#include "cache/remote_value.h"
#include "cache/tuning_record.h"
#include "jit/kernel_store.h"
#include "xxhash.h"

namespace jitgemm::fuzz {
namespace {

// A violation message quotes at most this much of a text, escaped, so that
// a report stays readable whatever the input was.
constexpr size_t kQuoteBytes = 160;

std::string Quote(std::string_view text) {
  std::string head(text.substr(0, kQuoteBytes));
  return absl::StrCat("\"", absl::CEscape(head), text.size() > kQuoteBytes ? "\"..." : "\"");
}

// "" if `status` is an error of `code`; a parser must not change the error
// kind its callers switch on (InvalidArgument for a bad manifest, DataLoss
// for a bad cache entry).
std::string WantCode(const absl::Status& status, absl::StatusCode code, const char* what) {
  if (status.code() == code) return "";
  return absl::StrCat(what, " failed with ", status.ToString(), ", want ",
                      absl::StatusCodeToString(code));
}

// --- manifest --------------------------------------------------------------

bool AlphaOrBetaNotFinite(const Manifest& m) {
  for (const ManifestEntry& e : m.problems) {
    if (!std::isfinite(e.problem.epilogue.alpha) || !std::isfinite(e.problem.epilogue.beta)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string CheckManifest(std::string_view bytes) {
  absl::StatusOr<Manifest> m = ParseManifest(std::string(bytes));
  if (!m.ok()) return WantCode(m.status(), absl::StatusCode::kInvalidArgument, "ParseManifest");
  // Once a bug (corpus/manifest/knownbug_alpha_1e39_becomes_inf.json): a number
  // beyond float's range parsed as infinity, which ManifestToJson writes as null.
  if (AlphaOrBetaNotFinite(*m)) return "accepted a non-finite alpha or beta";

  const std::string text = ManifestToJson(*m);
  absl::StatusOr<Manifest> again = ParseManifest(text);
  if (!again.ok()) {
    return absl::StrCat("ManifestToJson wrote what ParseManifest rejects: ",
                        again.status().ToString(), " in ", Quote(text));
  }
  if (again->problems.size() != m->problems.size()) {
    return absl::StrCat(m->problems.size(), " problems became ", again->problems.size());
  }
  for (size_t i = 0; i < m->problems.size(); ++i) {
    // ProblemToJson names every field of a problem, so equal texts mean
    // equal problems.
    const std::string before = ProblemToJson(m->problems[i].problem, m->problems[i].name);
    const std::string after = ProblemToJson(again->problems[i].problem, again->problems[i].name);
    if (before != after) {
      return absl::StrCat("problems[", i, "] changed in a round trip: ", Quote(before), " -> ",
                          Quote(after));
    }
  }
  // Only the options that ManifestToJson writes; backend and allow_tf32 are
  // a known loss (corpus_replay_test.cc, ManifestToJsonKeepsEveryParsedOption).
  if (again->options.tuning != m->options.tuning || again->options.pdl != m->options.pdl ||
      again->options.pointer_alignment != m->options.pointer_alignment) {
    return absl::StrCat("options changed in a round trip: ", Quote(text));
  }
  if (std::string text2 = ManifestToJson(*again); text2 != text) {
    return absl::StrCat("ManifestToJson is not stable: ", Quote(text), " -> ", Quote(text2));
  }
  return "";
}

// --- cache entry -----------------------------------------------------------

namespace {

using cache::CacheKey;
using cache::EntryKind;
using cache::EntryView;

EntryKind OtherKind(EntryKind kind) {
  return kind == EntryKind::kCubin ? EntryKind::kTuningRecord : EntryKind::kCubin;
}

// The properties of one byte string; `resealed` says its checksum is right.
std::string CheckEntryBytes(std::string_view bytes, bool resealed) {
  absl::StatusOr<EntryView> view = cache::ParseEntry(bytes);
  if (!view.ok()) {
    if (std::string e = WantCode(view.status(), absl::StatusCode::kDataLoss, "ParseEntry");
        !e.empty()) {
      return e;
    }
    if (resealed && view.status().message().find("checksum") != absl::string_view::npos) {
      return "checksum mismatch on an entry whose checksum was just recomputed";
    }
    // A refused entry serves no key. The probe key is the text at the key's
    // place when there is one, so that only the defect stands in the way.
    std::string probe_text;
    if (bytes.size() > cache::kEntryHeaderBytes) {
      probe_text = bytes.substr(cache::kEntryHeaderBytes, 16);
    }
    const CacheKey probe = cache::MakeCacheKey(probe_text);
    for (EntryKind kind : {EntryKind::kCubin, EntryKind::kTuningRecord}) {
      absl::StatusOr<std::string> payload = cache::DecodeEntry(bytes, probe, kind);
      if (payload.ok()) return "DecodeEntry served an entry that ParseEntry refuses";
    }
    return "";
  }
  if (view->version != cache::kEntryFormatVersion) {
    return absl::StrCat("accepted format version ", view->version);
  }
  if (cache::kEntryHeaderBytes + view->key_text.size() + view->payload.size() +
          cache::kEntryTrailerBytes !=
      bytes.size()) {
    return "accepted an entry whose sizes do not add up to the file";
  }
  const CacheKey key = cache::MakeCacheKey(std::string(view->key_text));
  if (cache::EncodeEntry(key, view->kind, view->payload) != bytes) {
    return "EncodeEntry of the parsed fields does not give back the same bytes";
  }
  absl::StatusOr<std::string> any_kind = cache::DecodeEntry(bytes, key);
  if (!any_kind.ok() || *any_kind != view->payload) {
    return "DecodeEntry under the entry's own key does not give its payload";
  }
  absl::StatusOr<std::string> same_kind = cache::DecodeEntry(bytes, key, view->kind);
  if (!same_kind.ok() || *same_kind != view->payload) {
    return "DecodeEntry under the entry's own key and kind does not give its payload";
  }
  absl::StatusOr<std::string> other_kind = cache::DecodeEntry(bytes, key, OtherKind(view->kind));
  if (std::string e = WantCode(other_kind.status(), absl::StatusCode::kDataLoss,
                               "DecodeEntry of the other kind");
      !e.empty()) {
    return e;
  }
  const CacheKey other_key = cache::MakeCacheKey(std::string(view->key_text) + "\n");
  absl::StatusOr<std::string> other = cache::DecodeEntry(bytes, other_key);
  return WantCode(other.status(), absl::StatusCode::kDataLoss, "DecodeEntry of another key");
}

}  // namespace

std::string CheckCacheEntry(std::string_view bytes) {
  if (std::string e = CheckEntryBytes(bytes, /*resealed=*/false); !e.empty()) {
    return absl::StrCat("as given: ", e);
  }
  // Random bytes almost never carry a right XXH3-64, and the checksum is the
  // last check before success: recompute it so the accepting path, and the
  // round trip, are fuzzed too.
  if (bytes.size() < cache::kEntryHeaderBytes + cache::kEntryTrailerBytes) return "";
  std::string sealed(bytes);
  const size_t body = sealed.size() - cache::kEntryTrailerBytes;
  const uint64_t sum = XXH3_64bits(sealed.data(), body);
  for (size_t i = 0; i < 8; ++i) sealed[body + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
  if (std::string e = CheckEntryBytes(sealed, /*resealed=*/true); !e.empty()) {
    return absl::StrCat("resealed: ", e);
  }
  return "";
}

// --- remote value ----------------------------------------------------------

namespace {

// The inner entry's key text, or "" when there is no readable one: the
// reader is always asked for the key the value claims, so the fuzzer gets
// past the key check.
CacheKey ClaimedKey(std::string_view value) {
  bool is_signed = false;
  absl::StatusOr<std::string_view> entry = cache::RemoteValueEntry(value, &is_signed);
  if (entry.ok()) {
    if (absl::StatusOr<cache::EntryView> view = cache::ParseEntry(*entry); view.ok()) {
      return cache::MakeCacheKey(std::string(view->key_text));
    }
  }
  return cache::MakeCacheKey("");
}

EntryKind ClaimedKind(std::string_view value) {
  bool is_signed = false;
  absl::StatusOr<std::string_view> entry = cache::RemoteValueEntry(value, &is_signed);
  if (entry.ok()) {
    if (absl::StatusOr<cache::EntryView> view = cache::ParseEntry(*entry); view.ok()) {
      return view->kind;
    }
  }
  return EntryKind::kCubin;
}

std::string CheckRemoteBytes(std::string_view bytes) {
  const CacheKey key = ClaimedKey(bytes);
  const EntryKind kind = ClaimedKind(bytes);
  absl::StatusOr<std::string> with = cache::DecodeRemoteValue(bytes, key, kind, kFuzzRemoteSecret);
  absl::StatusOr<std::string> without = cache::DecodeRemoteValue(bytes, key, kind, "");
  for (const absl::StatusOr<std::string>* r : {&with, &without}) {
    if (!r->ok() && r->status().code() != absl::StatusCode::kDataLoss &&
        r->status().code() != absl::StatusCode::kPermissionDenied) {
      return absl::StrCat("DecodeRemoteValue failed with ", r->status().ToString());
    }
  }
  if (with.ok() && !without.ok()) return "accepted with the secret but not without it";
  if (!without.ok() && without.status().code() != absl::StatusCode::kDataLoss) {
    return "refused without a secret for a reason other than DataLoss";
  }
  if (!without.ok()) return "";
  bool is_signed = false;
  (void)cache::RemoteValueEntry(bytes, &is_signed);
  if (!is_signed && with.ok()) return "accepted an unsigned value while holding a secret";
  if (with.ok()) {
    const std::string again = cache::EncodeRemoteValue(key, kind, *with, kFuzzRemoteSecret);
    if (again != bytes) return "a signed value does not re-encode to the same bytes";
  }
  if (!is_signed && cache::EncodeRemoteValue(key, kind, *without, "") != bytes) {
    return "an unsigned value does not re-encode to the same bytes";
  }
  absl::StatusOr<std::string> other =
      cache::DecodeRemoteValue(bytes, cache::MakeCacheKey(key.text + "\n"), kind, "");
  return WantCode(other.status(), absl::StatusCode::kDataLoss, "DecodeRemoteValue of another key");
}

}  // namespace

bool RemoteValueAccepted(std::string_view bytes) {
  return cache::DecodeRemoteValue(bytes, ClaimedKey(bytes), ClaimedKind(bytes), kFuzzRemoteSecret)
      .ok();
}

std::string CheckRemoteValue(std::string_view bytes) {
  if (std::string e = CheckRemoteBytes(bytes); !e.empty()) return absl::StrCat("as given: ", e);
  // Reseal: the entry's checksum and, for a value flagged signed, its MAC,
  // so the accepting path is fuzzed too.
  if (bytes.size() <
      cache::kRemoteHeaderBytes + cache::kEntryHeaderBytes + cache::kEntryTrailerBytes) {
    return "";
  }
  std::string sealed(bytes);
  const size_t body = sealed.size() - cache::kEntryTrailerBytes;
  const uint64_t sum =
      XXH3_64bits(sealed.data() + cache::kRemoteHeaderBytes, body - cache::kRemoteHeaderBytes);
  for (size_t i = 0; i < 8; ++i) sealed[body + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
  bool is_signed = false;
  absl::StatusOr<std::string_view> entry = cache::RemoteValueEntry(sealed, &is_signed);
  if (entry.ok() && is_signed) {
    if (absl::StatusOr<cache::EntryView> view = cache::ParseEntry(*entry); view.ok()) {
      const std::string resigned =
          cache::EncodeRemoteValue(cache::MakeCacheKey(std::string(view->key_text)), view->kind,
                                   view->payload, kFuzzRemoteSecret);
      sealed.replace(16, 32, resigned, 16, 32);
    }
  }
  if (std::string e = CheckRemoteBytes(sealed); !e.empty()) return absl::StrCat("resealed: ", e);
  return "";
}

// --- tuning record ---------------------------------------------------------

std::string CheckTuningRecord(std::string_view bytes) {
  absl::StatusOr<cache::TuningRecord> r = cache::TuningRecord::FromJson(bytes);
  if (!r.ok()) {
    return WantCode(r.status(), absl::StatusCode::kInvalidArgument, "TuningRecord::FromJson");
  }
  for (const auto& [name, us] : r->candidate_us) {
    if (!std::isfinite(us) || us < 0) return absl::StrCat("accepted time ", us, " for ", name);
  }
  if (!r->Matches(*r)) return absl::StrCat("a record does not match itself: ", r->Mismatch(*r));
  const std::string json = r->ToJson();
  absl::StatusOr<cache::TuningRecord> again = cache::TuningRecord::FromJson(json);
  if (!again.ok()) {
    return absl::StrCat("ToJson wrote what FromJson rejects: ", again.status().ToString(), " in ",
                        Quote(json));
  }
  if (!(*again == *r)) return absl::StrCat("the record changed in a round trip: ", Quote(json));
  if (std::string json2 = again->ToJson(); json2 != json) {
    return absl::StrCat("ToJson is not stable: ", Quote(json), " -> ", Quote(json2));
  }
  return "";
}

// --- bundle manifest -------------------------------------------------------

std::string CheckBundleManifest(std::string_view bytes) {
  absl::StatusOr<cache::BundleManifest> m = cache::BundleManifest::FromJson(bytes);
  if (!m.ok()) {
    return WantCode(m.status(), absl::StatusCode::kInvalidArgument, "BundleManifest::FromJson");
  }
  if (bytes.size() > cache::kMaxBundleManifestBytes) return "accepted a text over the size limit";
  for (const auto& [path, file] : m->files) {
    if (!cache::ParseEntryRelativePath(path))
      return absl::StrCat("accepted the path ", Quote(path));
  }
  const std::string json = m->ToJson();
  absl::StatusOr<cache::BundleManifest> again = cache::BundleManifest::FromJson(json);
  if (!again.ok()) {
    return absl::StrCat("ToJson wrote what FromJson rejects: ", again.status().ToString(), " in ",
                        Quote(json));
  }
  if (std::string json2 = again->ToJson(); json2 != json) {
    return absl::StrCat("the manifest changed in a round trip: ", Quote(json), " -> ",
                        Quote(json2));
  }
  return "";
}

// --- kernel binary ---------------------------------------------------------

namespace {

bool SameBinary(const jit::KernelBinary& a, const jit::KernelBinary& b) {
  return a.kernel_name == b.kernel_name && a.lowered_name == b.lowered_name && a.cubin == b.cubin &&
         a.registers == b.registers && a.spill_bytes == b.spill_bytes &&
         a.stack_bytes == b.stack_bytes && a.compile_ms == b.compile_ms;
}

}  // namespace

std::string CheckKernelBinary(std::string_view bytes) {
  const absl::string_view payload(bytes.data(), bytes.size());
  absl::StatusOr<jit::KernelBinary> b = jit::DeserializeBinary(payload);
  if (!b.ok()) return WantCode(b.status(), absl::StatusCode::kDataLoss, "DeserializeBinary");
  if (b->cubin.empty() || b->lowered_name.empty()) return "accepted an empty cubin or name";
  if (b->cubin.size() >= bytes.size() || !absl::EndsWith(payload, b->cubin)) {
    return "the cubin is not the tail of the payload";
  }
  if (b->kernel_name.find('\n') != std::string::npos ||
      b->lowered_name.find('\n') != std::string::npos) {
    return "a header line holds a newline";
  }
  if (b->compile_ms != 0) return "a deserialised binary claims a compile time";
  const std::string text = jit::SerializeBinary(*b);
  absl::StatusOr<jit::KernelBinary> again = jit::DeserializeBinary(text);
  if (!again.ok()) {
    return absl::StrCat("SerializeBinary wrote what DeserializeBinary rejects: ",
                        again.status().ToString(), " in ", Quote(text));
  }
  if (!SameBinary(*again, *b)) return absl::StrCat("changed in a round trip: ", Quote(text));
  if (jit::SerializeBinary(*again) != text) return "SerializeBinary is not stable";
  return "";
}

// --- registry --------------------------------------------------------------

const std::vector<FuzzTarget>& FuzzTargets() {
  static const std::vector<FuzzTarget> kTargets = {
      {"manifest", &CheckManifest,
       [](std::string_view b) { return ParseManifest(std::string(b)).ok(); }},
      {"cache_entry", &CheckCacheEntry,
       [](std::string_view b) { return cache::ParseEntry(b).ok(); }},
      {"tuning_record", &CheckTuningRecord,
       [](std::string_view b) { return cache::TuningRecord::FromJson(b).ok(); }},
      {"bundle_manifest", &CheckBundleManifest,
       [](std::string_view b) { return cache::BundleManifest::FromJson(b).ok(); }},
      {"remote_value", &CheckRemoteValue, &RemoteValueAccepted},
      {"kernel_binary", &CheckKernelBinary,
       [](std::string_view b) {
         return jit::DeserializeBinary(absl::string_view(b.data(), b.size())).ok();
       }},
  };
  return kTargets;
}

const FuzzTarget* FindFuzzTarget(std::string_view name) {
  for (const FuzzTarget& t : FuzzTargets()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace jitgemm::fuzz
