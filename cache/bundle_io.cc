#include "cache/bundle_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cache/folder_trust.h"
#include "cache/layout.h"
#include "cache/log.h"
#include "cache/ustar.h"

namespace jitgemm::cache {

absl::StatusOr<EntryView> Source::Check(const EntryFileInfo& entry, std::string_view bytes) const {
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

void Source::SetManifest(absl::StatusOr<std::string> text) {
  if (absl::IsNotFound(text.status())) {
    manifest_absent_ = true;
    manifest_error_ = absl::StrCat("no ", kBundleManifestFile, " (not a bundle)");
    return;
  }
  if (!text.ok()) {
    manifest_error_ = absl::StrCat(kBundleManifestFile, ": ", text.status().message());
    return;
  }
  manifest_text_ = *text;
  absl::StatusOr<BundleManifest> m = BundleManifest::FromJson(*text);
  if (m.ok()) {
    manifest_ = std::move(m).value();
  } else {
    manifest_error_ = absl::StrCat(kBundleManifestFile, ": ", m.status().message());
  }
}

namespace {

class DirSource : public Source {
 public:
  static absl::StatusOr<std::unique_ptr<Source>> Open(Env* env, const std::string& dir,
                                                      bool is_bundle) {
    absl::StatusOr<FileInfo> info = env->Stat(dir);
    if (!info.ok()) return info.status();
    if (!info->is_directory) {
      return absl::FailedPreconditionError(absl::StrCat("'", dir, "' is not a directory"));
    }
    // A folder another user could write to makes every entry in it
    // suspect, and `tar -xf` run as root keeps such modes: refuse the whole.
    absl::Status trusted = CheckTrustedTree(env, dir, RootUse::kReadOnly);
    if (!trusted.ok()) return trusted;
    std::unique_ptr<DirSource> source(new DirSource(env));
    absl::StatusOr<std::vector<EntryFileInfo>> entries =
        ListEntryFiles(env, dir, RootUse::kReadOnly);
    if (!entries.ok()) return entries.status();
    source->entries_ = std::move(entries).value();
    if (is_bundle) {
      absl::StatusOr<BundleManifestFiles> files = ReadBundleManifestFiles(env, dir);
      if (files.ok()) {
        source->signature_ = std::move(files->signature);
        source->SetManifest(std::move(files->manifest));
      } else {
        source->SetManifest(files.status());
      }
    }
    return std::unique_ptr<Source>(std::move(source));
  }

  absl::StatusOr<std::string> Read(const EntryFileInfo& entry) const override {
    if (!entry.untrusted.empty()) return absl::FailedPreconditionError(entry.untrusted);
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
      // `tar -xf` run as root keeps the mode: a world-writable folder or
      // entry would let any local user replace what was checked here.
      if (m.mode & S_IWOTH) {
        return absl::FailedPreconditionError(
            absl::StrFormat("'%s': member %s has mode %04o: writable by every user once extracted",
                            path, QuotedForHumans(m.name), m.mode));
      }
      if (m.is_directory) continue;
      if (m.name == kBundleManifestFile) {
        manifest = source->reader_->Read(m);
      } else if (m.name == kBundleSignatureFile) {
        source->signature_ = source->reader_->Read(m).value_or("");
      } else if (std::optional<EntryKind> kind = EntryPathKind(m.name)) {
        EntryFileInfo e;
        e.kind = *kind;
        e.relative_path = m.name;
        e.path = absl::StrCat(path, ":", m.name);
        e.size = m.size;
        source->member_of_[m.name] = i;
        source->entries_.push_back(std::move(e));
      } else if (m.name != kBundleReadmeFile && m.name != kBundleSignatureFile) {
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

  absl::Status Finish(const std::string& manifest, const std::string& readme,
                      const std::string& signature) override {
    absl::Status s = WriteWholeFile(env_, JoinPath(staging_, kBundleReadmeFile), readme);
    if (s.ok() && !signature.empty()) {
      s = WriteWholeFile(env_, JoinPath(staging_, kBundleSignatureFile), signature);
    }
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

  absl::Status Finish(const std::string& manifest, const std::string& readme,
                      const std::string& signature) override {
    absl::Status s = writer_->AddFile(kBundleReadmeFile, readme);
    if (s.ok() && !signature.empty()) s = writer_->AddFile(kBundleSignatureFile, signature);
    if (s.ok()) s = writer_->AddFile(kBundleManifestFile, manifest);
    if (s.ok()) s = writer_->Finish();
    return s;
  }

 private:
  explicit TarSink(std::unique_ptr<TarWriter> writer) : writer_(std::move(writer)) {}
  std::unique_ptr<TarWriter> writer_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Source>> OpenDirSource(Env* env, const std::string& dir,
                                                      bool is_bundle) {
  return DirSource::Open(env, dir, is_bundle);
}

absl::StatusOr<std::unique_ptr<Sink>> CreateSink(Env* env, const std::string& out,
                                                 absl::Time mtime) {
  if (IsArchivePath(out)) return TarSink::Create(env, out, mtime);
  return DirSink::Create(env, out);
}

bool IsArchivePath(absl::string_view path) { return absl::EndsWith(path, ".tar"); }

absl::StatusOr<std::unique_ptr<Source>> OpenBundle(Env* env, const std::string& from) {
  if (IsArchivePath(from)) return TarSource::Open(from);
  return DirSource::Open(env, from, /*is_bundle=*/true);
}

}  // namespace jitgemm::cache
