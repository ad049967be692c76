#include "api/src/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/json_fields.h"
#include "core/option_names.h"
#include "core/options_signature.h"

namespace jitgemm {
namespace {

using json = nlohmann::json;

// Reads an optional field; on a type mismatch records an error naming `path`.
class Reader {
 public:
  std::string error;

  template <class T>
  void Get(const json& obj, const char* key, const std::string& path, T* out) {
    if (!error.empty() || !obj.contains(key)) return;
    const json& v = obj.at(key);
    if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) return Fail(path + "." + key, "a string");
      *out = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) return Fail(path + "." + key, "true or false");
      *out = v.get<bool>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) return Fail(path + "." + key, "a number");
      const double d = v.get<double>();
      // A value the field's type cannot hold would become infinity.
      if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<T>::max()) {
        return Fail(path + "." + key, "a finite number in range");
      }
      *out = static_cast<T>(d);
    } else {
      if (!v.is_number_integer()) return Fail(path + "." + key, "an integer");
      // Range-check before narrowing: a wrapped value would silently mean
      // something else (2^32 + 16 as 16, 2^64 - 1 as -1).
      bool in_range;
      if (v.is_number_unsigned()) {
        in_range = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      } else {
        const int64_t x = v.get<int64_t>();
        in_range = x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                   x <= static_cast<int64_t>(std::numeric_limits<T>::max());
      }
      if (!in_range) return Fail(path + "." + key, "an integer in range");
      *out = static_cast<T>(v.get<int64_t>());
    }
  }
  void Fail(const std::string& path, const std::string& want) {
    if (error.empty()) error = absl::StrCat(path, ": expected ", want);
  }
};

bool ParseType(const std::string& s, DataType* t) {
  if (s == "f32" || s == "fp32" || s == "float32")
    *t = DataType::kF32;
  else if (s == "f16" || s == "fp16" || s == "float16")
    *t = DataType::kF16;
  else if (s == "bf16" || s == "bfloat16")
    *t = DataType::kBF16;
  else
    return false;
  return true;
}

// Unknown fields are errors: a misspelt "layuot" would otherwise leave the
// default layout in place and warm a kernel nobody asked for.
void CheckFields(Reader& r, const json& obj, const std::string& path,
                 std::initializer_list<absl::string_view> known) {
  if (!r.error.empty()) return;
  absl::Status s = cache::CheckKnownFields(obj, known, path);
  if (!s.ok()) r.error = std::string(s.message());
}

void ParseOperand(Reader& r, const json& obj, const std::string& path, Operand* op) {
  if (!obj.is_object()) return r.Fail(path, "an object");
  CheckFields(r, obj, path, {"type", "layout", "ld", "batch_stride"});
  std::string type, layout;
  r.Get(obj, "type", path, &type);
  r.Get(obj, "layout", path, &layout);
  r.Get(obj, "ld", path, &op->ld);
  r.Get(obj, "batch_stride", path, &op->batch_stride);
  if (!type.empty() && !ParseType(type, &op->type)) r.Fail(path + ".type", "f32, f16 or bf16");
  if (layout == "row")
    op->layout = Layout::kRowMajor;
  else if (layout == "col")
    op->layout = Layout::kColMajor;
  else if (!layout.empty())
    r.Fail(path + ".layout", "\"row\" or \"col\"");
}

const char* TypeName(DataType t) { return DataTypeName(t); }
const char* LayoutName(Layout l) { return l == Layout::kRowMajor ? "row" : "col"; }
const char* BiasName(BiasMode b) {
  return b == BiasMode::kPerColumn ? "column" : b == BiasMode::kPerRow ? "row" : "none";
}

// The fields of `o` that a manifest holds: those of the options signature
// (core/options_signature.h), so that a plan made with the manifest's options
// reads the tuning decision a plan made with the recorded ones stored.
void ParseOptions(Reader& r, const json& o, const std::string& path, Options* out) {
  if (!o.is_object()) return r.Fail(path, "an object");
  std::string tuning, backend, regime;
  CheckFields(r, o, path,
              {"tuning", "backend", "pdl", "constant_b", "allow_tf32", "pointer_alignment",
               "regime", "win_margin"});
  r.Get(o, "tuning", path, &tuning);
  r.Get(o, "backend", path, &backend);
  r.Get(o, "pdl", path, &out->pdl);
  r.Get(o, "constant_b", path, &out->constant_b);
  r.Get(o, "allow_tf32", path, &out->allow_tf32);
  r.Get(o, "pointer_alignment", path, &out->pointer_alignment);
  r.Get(o, "regime", path, &regime);
  r.Get(o, "win_margin", path, &out->win_margin);
  if (!r.error.empty()) return;
  // Kernels load vectors of up to this many bytes; 3 would warm kernels no
  // plan accepts.
  const int align = out->pointer_alignment;
  if (align != 1 && align != 2 && align != 4 && align != 8 && align != 16) {
    r.Fail(path + ".pointer_alignment", "1, 2, 4, 8 or 16");
  }
  if (!(out->win_margin >= 0.0 && out->win_margin < 1.0)) {
    r.Fail(path + ".win_margin", "a number in [0, 1)");
  }
  // A field left out keeps what `out` had; a name not in core/option_names.h fails.
  auto set = [&](const std::string& text, const char* field, auto parse, auto* value,
                 const char* names) {
    if (text.empty()) return;
    if (auto v = parse(text)) {
      *value = *v;
    } else {
      r.Fail(path + "." + field, names);
    }
  };
  set(tuning, "tuning", ParseTuningPolicy, &out->tuning, "heuristic, fast or exhaustive");
  set(backend, "backend", ParseBackendPolicy, &out->backend, "auto, jit or cublas");
  set(regime, "regime", ParseTimingRegime, &out->regime, "auto, streaming or resident");
}

json OptionsJson(const Options& o) {
  return {{"tuning", TuningPolicyName(o.tuning)},
          {"backend", BackendPolicyName(o.backend)},
          {"pdl", o.pdl},
          {"constant_b", o.constant_b},
          {"allow_tf32", o.allow_tf32},
          {"pointer_alignment", o.pointer_alignment},
          {"regime", TimingRegimeName(o.regime)},
          {"win_margin", o.win_margin}};
}

json OperandJson(const Operand& op) {
  return {{"type", TypeName(op.type)},
          {"layout", LayoutName(op.layout)},
          {"ld", op.ld},
          {"batch_stride", op.batch_stride}};
}

}  // namespace

absl::StatusOr<Manifest> ParseManifest(const std::string& text) {
  absl::StatusOr<json> parsed =
      cache::ParseBoundedJson(text, {kMaxManifestBytes, kMaxManifestDepth}, "manifest");
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  if (!root.is_object()) return absl::InvalidArgumentError("manifest: expected a JSON object");
  Manifest m;
  Reader r;
  CheckFields(r, root, "manifest", {"version", "options", "problems"});
  int version = 1;
  r.Get(root, "version", "manifest", &version);
  if (r.error.empty() && version != 1) {
    return absl::InvalidArgumentError(absl::StrCat("manifest.version: ", version, " is not 1"));
  }
  if (root.contains("options")) ParseOptions(r, root.at("options"), "options", &m.options);
  if (!root.contains("problems") || !root.at("problems").is_array()) {
    return absl::InvalidArgumentError("manifest.problems: expected an array");
  }
  const json& problems = root.at("problems");
  for (size_t i = 0; i < problems.size() && r.error.empty(); ++i) {
    const std::string path = absl::StrCat("problems[", i, "]");
    const json& pj = problems[i];
    if (!pj.is_object()) {
      r.Fail(path, "an object");
      break;
    }
    ManifestEntry e;
    GemmProblem& p = e.problem;
    CheckFields(
        r, pj, path,
        {"name", "m", "n", "k", "batch_count", "dtype", "a", "b", "c", "d", "epilogue", "options"});
    if (pj.contains("options")) {
      e.options = m.options;
      ParseOptions(r, pj.at("options"), path + ".options", &*e.options);
    }
    r.Get(pj, "name", path, &e.name);
    r.Get(pj, "m", path, &p.m);
    r.Get(pj, "n", path, &p.n);
    r.Get(pj, "k", path, &p.k);
    r.Get(pj, "batch_count", path, &p.batch_count);
    std::string dtype;
    r.Get(pj, "dtype", path, &dtype);  // shorthand: every operand's type
    if (!dtype.empty()) {
      DataType t = DataType::kF32;
      if (!ParseType(dtype, &t)) r.Fail(path + ".dtype", "f32, f16 or bf16");
      p.a.type = p.b.type = p.c.type = p.d.type = t;
    }
    for (auto [key, op] : {std::pair{"a", &p.a}, {"b", &p.b}, {"c", &p.c}, {"d", &p.d}}) {
      if (pj.contains(key)) ParseOperand(r, pj.at(key), path + "." + key, op);
    }
    if (pj.contains("epilogue")) {
      const json& ej = pj.at("epilogue");
      const std::string ep = path + ".epilogue";
      if (!ej.is_object()) {
        r.Fail(ep, "an object");
        break;
      }
      std::string bias, act, gate;
      CheckFields(r, ej, ep, {"alpha", "beta", "bias", "bias_batch_stride", "activation", "gate"});
      r.Get(ej, "alpha", ep, &p.epilogue.alpha);
      r.Get(ej, "beta", ep, &p.epilogue.beta);
      r.Get(ej, "bias", ep, &bias);
      r.Get(ej, "bias_batch_stride", ep, &p.epilogue.bias_batch_stride);
      r.Get(ej, "activation", ep, &act);
      r.Get(ej, "gate", ep, &gate);
      if (gate == "halves")
        p.epilogue.gate = Gate::kHalves;
      else if (!gate.empty() && gate != "none")
        r.Fail(ep + ".gate", "none or halves");
      if (bias == "column")
        p.epilogue.bias = BiasMode::kPerColumn;
      else if (bias == "row")
        p.epilogue.bias = BiasMode::kPerRow;
      else if (!bias.empty() && bias != "none")
        r.Fail(ep + ".bias", "none, column or row");
      bool found = act.empty();
      for (Activation a : {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                           Activation::kGeluErf, Activation::kSilu}) {
        if (act == ActivationName(a)) {
          p.epilogue.activation = a;
          found = true;
        }
      }
      if (!found) r.Fail(ep + ".activation", "none, relu, gelu_tanh, gelu_erf or silu");
    }
    m.problems.push_back(std::move(e));
  }
  if (!r.error.empty()) return absl::InvalidArgumentError(absl::StrCat("manifest: ", r.error));
  return m;
}

absl::StatusOr<std::string> ReadManifestFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then
  // refuses it (and devices such as /dev/zero) before anything is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  absl::Status status = absl::OkStatus();
  if (::fstat(fd, &st) != 0) {
    status = absl::InternalError(absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    status = absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  } else if (static_cast<uint64_t>(st.st_size) > kMaxManifestBytes) {
    status = absl::InvalidArgumentError(
        absl::StrCat(path, ": ", st.st_size, " bytes, more than the limit of ", kMaxManifestBytes));
  }
  std::string text;
  if (status.ok()) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status =
            absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
      }
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    text.resize(done);  // a file that shrank meanwhile
  }
  ::close(fd);
  if (!status.ok()) return status;
  return text;
}

std::string ProblemToJson(const GemmProblem& p, const std::string& name) {
  json j = {{"m", p.m},
            {"n", p.n},
            {"k", p.k},
            {"batch_count", p.batch_count},
            {"a", OperandJson(p.a)},
            {"b", OperandJson(p.b)},
            {"c", OperandJson(p.c)},
            {"d", OperandJson(p.d)},
            {"epilogue",
             {{"alpha", p.epilogue.alpha},
              {"beta", p.epilogue.beta},
              {"bias", BiasName(p.epilogue.bias)},
              {"bias_batch_stride", p.epilogue.bias_batch_stride},
              {"activation", ActivationName(p.epilogue.activation)}}}};
  // Written only when gated, so that manifests of ungated problems stay as they were.
  if (p.epilogue.gate != Gate::kNone) j["epilogue"]["gate"] = GateName(p.epilogue.gate);
  if (!name.empty()) j["name"] = name;
  return j.dump();
}

std::string ManifestToJson(const Manifest& m) {
  json problems = json::array();
  const std::string shared = OptionsSignature(m.options);
  for (const auto& e : m.problems) {
    json j = json::parse(ProblemToJson(e.problem, e.name));
    // Only where a problem is planned with other options than the manifest's.
    if (OptionsSignature(m.OptionsOf(e)) != shared) j["options"] = OptionsJson(m.OptionsOf(e));
    problems.push_back(std::move(j));
  }
  json root = {{"version", 1}, {"options", OptionsJson(m.options)}, {"problems", problems}};
  return root.dump(2);
}

}  // namespace jitgemm
