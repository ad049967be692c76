// Fuzz checks: what must hold when untrusted bytes reach one of the parsers
// (RELIABILITY 17). Each check feeds the bytes to the parser and, where the
// parser accepts them, tests a cheap round trip through the matching writer.
//
// The same checks run in two places: under libFuzzer (fuzz_main.cc, clang
// only), where a violation aborts so that libFuzzer keeps the input, and in
// corpus_replay_test.cc (any compiler), which runs the checked-in corpus.
// A crash, a leak, a hang or an exception is found by the harness around
// them (sanitizers, libFuzzer's -timeout, GoogleTest); a check itself reports
// only a broken property, as text.
//
// Thread safety: pure functions.
//
// Example:
//   const FuzzTarget* t = FindFuzzTarget("manifest");
//   std::string violation = t->check(bytes);  // "" when every property holds
#ifndef JITGEMM_TESTS_FUZZ_FUZZ_CHECKS_H_
#define JITGEMM_TESTS_FUZZ_FUZZ_CHECKS_H_

#include <string>
#include <string_view>
#include <vector>

namespace jitgemm::fuzz {

struct FuzzTarget {
  // The corpus directory name (tests/fuzz/corpus/<name>) and the fuzzer's
  // executable stem (<name>_fuzzer).
  const char* name;
  // "" if every property holds for `bytes`, else what broke.
  std::string (*check)(std::string_view bytes);
  // Whether the parser alone accepts `bytes` (the corpus's reject_ and
  // accept_ files say which they expect).
  bool (*accepts)(std::string_view bytes);
};

// jitgemm::ParseManifest, then ManifestToJson and ParseManifest again: the
// same problems, options and text.
std::string CheckManifest(std::string_view bytes);

// jitgemm::cache::ParseEntry / DecodeEntry on the bytes as given, and again
// with the trailing checksum recomputed (so the fuzzer reaches past it): any
// defect is DataLoss; an accepted entry re-encodes to the same bytes and
// decodes only under its own key text and kind.
std::string CheckCacheEntry(std::string_view bytes);

// jitgemm::cache::TuningRecord::FromJson; an accepted record survives
// ToJson and FromJson unchanged.
std::string CheckTuningRecord(std::string_view bytes);

// jitgemm::cache::BundleManifest::FromJson, bounded (size, depth, repeated
// and unknown keys): a refusal is InvalidArgument; an accepted manifest lists
// only well-formed entry paths and survives ToJson and FromJson unchanged.
std::string CheckBundleManifest(std::string_view bytes);

// jitgemm::jit::DeserializeBinary; an accepted binary survives
// SerializeBinary and DeserializeBinary unchanged.
std::string CheckKernelBinary(std::string_view bytes);

// The secret the remote_value target signs and checks with.
inline constexpr char kFuzzRemoteSecret[] = "jitgemm-fuzz-remote-secret-0123";

// jitgemm::cache::DecodeRemoteValue (the remote tier's reader) with a secret
// and without, under the key text of the inner entry, on the bytes as given
// and again with the entry checksum and the HMAC recomputed (so the fuzzer
// reaches past both): a refusal is DataLoss or PermissionDenied and never
// happens without a reason; an accepted value re-encodes to the same bytes,
// and a value accepted with the secret is accepted without it.
std::string CheckRemoteValue(std::string_view bytes);
// Whether the reader, holding kFuzzRemoteSecret, accepts `bytes`.
bool RemoteValueAccepted(std::string_view bytes);

// Every target above, in a fixed order.
const std::vector<FuzzTarget>& FuzzTargets();

// The target called `name`, or nullptr.
const FuzzTarget* FindFuzzTarget(std::string_view name);

}  // namespace jitgemm::fuzz

#endif  // JITGEMM_TESTS_FUZZ_FUZZ_CHECKS_H_
