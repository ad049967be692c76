// jitgemm-cache export, import, verify-bundle: moving entries between
// machines (cache/bundle.h).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "api/src/manifest_kernels.h"
#include "cache/bundle.h"
#include "cache/bundle_signature.h"
#include "cache/disk_cache.h"
#include "tools/cache/commands.h"

namespace jitgemm::tools {
namespace {

using cache::BundleManifest;

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// SOURCE_DATE_EPOCH (reproducible builds) or now.
absl::Time CreationTime() {
  int64_t seconds = 0;
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
      epoch != nullptr && absl::SimpleAtoi(epoch, &seconds) && seconds >= 0) {
    return absl::FromUnixSeconds(seconds);
  }
  return absl::Now();
}

std::string Values(const BundleManifest& m, const std::string& field) {
  auto it = m.key_fields.find(field);
  return it == m.key_fields.end() || it->second.empty() ? "-"
                                                        : Esc(absl::StrJoin(it->second, ", "));
}

void PrintManifest(const BundleManifest& m) {
  std::printf("bundle: %s, created by %s (jitgemm %s) at %s\n", Esc(m.format).c_str(),
              Esc(m.created_by).c_str(), Esc(m.library_version).c_str(), Esc(m.created_at).c_str());
  std::printf("selection: %s\n", Esc(m.selection).c_str());
  if (!m.manifests.empty()) {
    std::printf("manifests: %s\n", Esc(absl::StrJoin(m.manifests, ", ")).c_str());
  }
  std::printf("keys: arch %s; nvrtc %s; abi %s; sources %s\n", Values(m, "arch").c_str(),
              Values(m, "nvrtc").c_str(), Values(m, "abi").c_str(), Values(m, "sources").c_str());
  std::printf("listed: %llu entries, %s\n", static_cast<unsigned long long>(m.entries),
              Bytes(m.bytes).c_str());
}

void PrintProblems(const cache::BundleVerifyReport& r) {
  std::printf("signature: %s\n", Esc(r.signature).c_str());
  if (!r.signature_error.empty()) {
    std::printf("signature refused: %s\n", Esc(r.signature_error).c_str());
  }
  for (const cache::BadEntry& bad : r.corrupt) {
    std::printf("corrupt: %s: %s\n", Esc(bad.path).c_str(), Esc(bad.reason).c_str());
  }
  for (const std::string& p : r.missing)
    std::printf("missing (listed, absent): %s\n", Esc(p).c_str());
  for (const std::string& p : r.unlisted)
    std::printf("unlisted (not in the manifest): %s\n", Esc(p).c_str());
  for (const std::string& p : r.ignored)
    std::printf("ignored archive member: %s\n", Esc(p).c_str());
}

// Why this build would find none of the bundle's kernels, or "".
std::vector<std::string> Incompatibilities(const BundleManifest& m, const std::string& arch) {
  std::vector<std::string> why;
  auto it = m.kinds.find("cubin");
  if (it == m.kinds.end() || it->second.entries == 0) return why;
  auto lacks = [&](const std::string& field, const std::string& value) {
    auto f = m.key_fields.find(field);
    return f == m.key_fields.end() ||
           std::find(f->second.begin(), f->second.end(), value) == f->second.end();
  };
  const std::string abi = absl::StrCat(tools::LibraryAbiVersion());
  if (lacks("abi", abi)) {
    why.push_back(absl::StrCat("library ABI: bundle ", Values(m, "abi"), ", this build ", abi));
  }
  // Each kernel key carries the hash of the sources its kernel includes: a
  // bundle none of whose hashes this build can produce was built from other
  // kernel sources.
  const std::set<std::string>& ours = tools::KernelSourcesHashes();
  auto sources = m.key_fields.find("sources");
  if (sources == m.key_fields.end() ||
      std::none_of(sources->second.begin(), sources->second.end(),
                   [&](const std::string& h) { return ours.count(h) > 0; })) {
    why.push_back(absl::StrCat("kernel sources: bundle ", Values(m, "sources"), ", this build ",
                               absl::StrJoin(ours, ",")));
  }
  if (absl::StatusOr<int> nvrtc = tools::NvrtcVersionForKey();
      nvrtc.ok() && lacks("nvrtc", absl::StrCat(*nvrtc))) {
    why.push_back(absl::StrCat("NVRTC: bundle ", Values(m, "nvrtc"), ", here ", *nvrtc,
                               " (set JITGEMM_NVRTC_VERSION where NVRTC is absent)"));
  }
  if (!arch.empty() && lacks("arch", arch)) {
    why.push_back(absl::StrCat("arch: bundle ", Values(m, "arch"), ", asked for ", arch));
  }
  return why;
}

}  // namespace

int ExportCommand() {
  cache::ExportRequest req;
  req.out = absl::GetFlag(FLAGS_out);
  if (req.out.empty()) {
    Complain("export needs --out=DIR or --out=FILE.tar");
    return kExitUsage;
  }
  req.from = absl::GetFlag(FLAGS_from);
  std::string source = req.from;
  if (req.from.empty()) {
    std::shared_ptr<cache::DiskCache> c = OpenForLooking();
    req.roots = c->readonly_roots();
    if (c->mode() != cache::CacheMode::kOff) req.roots.push_back(c->root());
    source = absl::StrJoin(req.roots, ":");
    if (req.roots.empty()) {
      Complain(
          "no cache root in use (JITGEMM_CACHE=off, or see the warnings above): nothing to "
          "export");
      return kExitProblems;
    }
  }
  const std::vector<std::string> manifests = absl::GetFlag(FLAGS_manifest);
  std::map<std::string, std::string> name_of;  // key hex -> "kernel (problem)"
  int invalid = 0;
  if (manifests.empty()) {
    req.selection = req.from.empty() ? absl::StrCat("whole cache (", source, ")")
                                     : absl::StrCat("every entry of bundle ", source);
  } else {
    absl::StatusOr<std::optional<TuningPolicy>> tuning =
        ParseTuningOverride(absl::GetFlag(FLAGS_tuning));
    if (!tuning.ok()) {
      Complain(tuning.status().message());
      return kExitUsage;
    }
    absl::StatusOr<TargetArch> target =
        ResolveTarget(absl::GetFlag(FLAGS_arch), absl::GetFlag(FLAGS_sms));
    if (!target.ok()) {
      Complain(target.status().message());
      return kExitUsage;
    }
    absl::StatusOr<ManifestKernels> kernels = LoadManifestKernels(manifests, *target, *tuning);
    if (!kernels.ok()) {
      Complain(kernels.status().message());
      return kExitProblems;
    }
    for (const std::string& line : kernels->invalid) Complain(line);
    invalid = static_cast<int>(kernels->invalid.size());
    for (const ManifestKernel& k : kernels->kernels) {
      absl::StatusOr<cache::CacheKey> key = KernelCacheKey(k.source, target->arch);
      if (!key.ok()) {
        Complain(key.status().ToString());
        return kExitProblems;
      }
      name_of[key->Hex()] =
          absl::StrCat(k.source.kernel_name, " (", k.problem, ", ", k.manifest, ")");
      req.keys.push_back({cache::EntryKind::kCubin, *std::move(key)});
    }
    if (absl::GetFlag(FLAGS_tuning_records)) {
      std::set<std::string> signatures(kernels->signatures.begin(), kernels->signatures.end());
      req.tuning_filter = [signatures](std::string_view key_text) {
        return signatures.count(cache::KeyTextField(key_text, "problem")) > 0;
      };
    }
    req.all = false;
    req.selection = absl::StrFormat(
        "the %zu kernels of %d problems in %zu manifests for %s (%d SMs, tuning %s)%s",
        kernels->kernels.size(), kernels->problems, manifests.size(), target->arch,
        target->target.multiprocessors,
        absl::GetFlag(FLAGS_tuning).empty() ? "as in the manifests" : absl::GetFlag(FLAGS_tuning),
        req.tuning_filter ? ", with their tuning records" : "");
    for (const std::string& m : manifests) req.manifests.push_back(BaseName(m));
  }
  if (const std::string key_file = absl::GetFlag(FLAGS_sign_key); !key_file.empty()) {
    absl::StatusOr<std::string> pem = cache::Env::Default()->ReadFile(key_file, 64 << 10);
    if (!pem.ok()) {
      Complain(absl::StrCat("--sign-key: ", pem.status().message()));
      return kExitUsage;
    }
    req.sign_key_pem = std::move(pem).value();
  }
  req.created_by = "jitgemm-cache " JITGEMM_VERSION_STRING;
  req.library_version = JITGEMM_VERSION_STRING;
  req.created_at = CreationTime();

  absl::StatusOr<cache::ExportReport> r = cache::ExportBundle(req, cache::Env::Default());
  if (!r.ok()) {
    Complain(absl::StrCat("export: ", r.status().ToString()));
    return kExitProblems;
  }
  const BundleManifest& m = r->manifest;
  auto kind = [&](const char* k) {
    auto it = m.kinds.find(k);
    return it == m.kinds.end() ? cache::KindTotals{} : it->second;
  };
  std::printf("wrote %s %s from %s\n", r->archive ? "archive" : "directory", Esc(r->out).c_str(),
              Esc(source).c_str());
  std::printf("selection: %s\n", Esc(m.selection).c_str());
  std::printf(
      "entries: %llu, %s: %llu kernels (%s), %llu tuning records (%s)\n",
      static_cast<unsigned long long>(m.entries), Bytes(m.bytes).c_str(),
      static_cast<unsigned long long>(kind("cubin").entries), Bytes(kind("cubin").bytes).c_str(),
      static_cast<unsigned long long>(kind("tuning").entries), Bytes(kind("tuning").bytes).c_str());
  std::printf("keys: arch %s; nvrtc %s; abi %s; sources %s\n", Values(m, "arch").c_str(),
              Values(m, "nvrtc").c_str(), Values(m, "abi").c_str(), Values(m, "sources").c_str());
  for (const cache::BadEntry& bad : r->corrupt) {
    std::printf("skipped corrupt: %s: %s\n", Esc(bad.path).c_str(), Esc(bad.reason).c_str());
  }
  for (const std::string& hex : r->missing) {
    std::printf("MISSING %s [%s]\n", Esc(name_of[hex]).c_str(), Esc(hex).c_str());
  }
  if (!r->missing.empty()) {
    std::printf(
        "the bundle lacks %zu of the %zu kernels the manifests need: warm them first "
        "(jitgemm-warmup --arch=... with the same --tuning and --sms)\n",
        r->missing.size(), req.keys.size());
  }
  return r->missing.empty() && invalid == 0 ? kExitOk : kExitProblems;
}

int ImportCommand() {
  const std::string from = absl::GetFlag(FLAGS_from);
  if (from.empty()) {
    Complain("import needs --from=DIR or --from=FILE.tar");
    return kExitUsage;
  }
  std::shared_ptr<cache::DiskCache> c = cache::DiskCache::Default();
  absl::StatusOr<cache::ImportReport> r = cache::ImportBundle(from, *c);
  if (!r.ok()) {
    Complain(absl::StrCat("import: ", r.status().ToString()));
    return kExitProblems;
  }
  const cache::BundleVerifyReport& v = r->verify;
  if (v.manifest.has_value()) {
    PrintManifest(*v.manifest);
  } else {
    std::printf("note: %s; importing every sound entry\n", Esc(v.manifest_error).c_str());
  }
  PrintProblems(v);
  std::printf(
      "imported %llu entries (%s) into %s; %llu already present; skipped %zu corrupt, "
      "%zu unlisted; %zu listed but missing; %llu store failures\n",
      static_cast<unsigned long long>(r->imported), Bytes(r->imported_bytes).c_str(),
      Esc(c->root()).c_str(), static_cast<unsigned long long>(r->already_present), v.corrupt.size(),
      v.unlisted.size(), v.missing.size(), static_cast<unsigned long long>(r->store_failures));
  const bool clean =
      v.corrupt.empty() && v.unlisted.empty() && v.missing.empty() && r->store_failures == 0;
  return clean ? kExitOk : kExitProblems;
}

int VerifyBundleCommand() {
  const std::string from = absl::GetFlag(FLAGS_from);
  if (from.empty()) {
    Complain("verify-bundle needs --from=DIR or --from=FILE.tar");
    return kExitUsage;
  }
  // The keys a jitgemm process here would trust: with them set, an unsigned
  // bundle fails verification.
  std::optional<cache::TrustedKeys> keys;
  if (const cache::CacheSettings s = cache::CacheSettings::FromEnvironment();
      !s.trusted_keys.empty()) {
    absl::StatusOr<cache::TrustedKeys> loaded = cache::TrustedKeys::Load(s.trusted_keys);
    if (!loaded.ok()) {
      Complain(absl::StrCat("JITGEMM_CACHE_TRUSTED_KEYS: ", loaded.status().message()));
      return kExitProblems;
    }
    keys = std::move(loaded).value();
  }
  absl::StatusOr<cache::BundleVerifyReport> r =
      cache::VerifyBundle(from, cache::Env::Default(), keys ? &*keys : nullptr);
  if (!r.ok()) {
    Complain(absl::StrCat("verify-bundle: ", r.status().ToString()));
    return kExitProblems;
  }
  if (r->manifest.has_value()) {
    PrintManifest(*r->manifest);
  } else {
    std::printf("%s\n", Esc(r->manifest_error).c_str());
  }
  if (absl::GetFlag(FLAGS_list) && r->manifest.has_value()) {
    for (const auto& [path, file] : r->manifest->files) {
      std::printf("  %s %llu %s\n", Esc(path).c_str(), static_cast<unsigned long long>(file.bytes),
                  Esc(file.checksum).c_str());
    }
  }
  PrintProblems(*r);
  std::printf("%s: %llu entries present, %llu sound (%s), %zu corrupt, %zu missing, %zu unlisted\n",
              Esc(from).c_str(), static_cast<unsigned long long>(r->entries),
              static_cast<unsigned long long>(r->valid), Bytes(r->bytes).c_str(), r->corrupt.size(),
              r->missing.size(), r->unlisted.size());
  if (!r->ok()) {
    std::printf("bundle FAILED verification\n");
    return kExitProblems;
  }
  std::vector<std::string> why = Incompatibilities(*r->manifest, absl::GetFlag(FLAGS_arch));
  if (!why.empty()) {
    std::printf("bundle intact, but this build would find none of its kernels:\n  %s\n",
                absl::StrJoin(why, "\n  ").c_str());
    return kExitIncompatible;
  }
  std::printf("bundle OK\n");
  return kExitOk;
}

int KeygenCommand() {
  const std::string prefix = absl::GetFlag(FLAGS_out);
  if (prefix.empty()) {
    Complain("keygen needs --out=PREFIX (writes PREFIX.key and PREFIX.pub)");
    return kExitUsage;
  }
  absl::StatusOr<cache::SigningKeyPair> pair = cache::GenerateSigningKey();
  if (!pair.ok()) {
    Complain(pair.status().ToString());
    return kExitProblems;
  }
  // O_EXCL: never overwrite a key; the private one is for its owner only.
  for (const auto& [suffix, text, mode] : {std::tuple{".key", &pair->private_pem, 0600},
                                           std::tuple{".pub", &pair->public_pem, 0644}}) {
    const std::string path = prefix + suffix;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    const bool written =
        fd >= 0 && ::write(fd, text->data(), text->size()) == static_cast<ssize_t>(text->size());
    if (fd >= 0) ::close(fd);
    if (!written) {
      Complain(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
      return kExitProblems;
    }
  }
  std::printf(
      "wrote %s.key (private: sign with export --sign-key=%s.key) and %s.pub (public: list "
      "it in JITGEMM_CACHE_TRUSTED_KEYS)\n",
      Esc(prefix).c_str(), Esc(prefix).c_str(), Esc(prefix).c_str());
  return kExitOk;
}

}  // namespace jitgemm::tools
