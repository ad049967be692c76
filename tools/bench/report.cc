#include "tools/bench/report.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace jitgemm::bench {
namespace {

const CellResult* Find(const CaseResult& r, Impl impl) {
  for (const CellResult& c : r.cells) {
    if (c.impl == impl) return &c;
  }
  return nullptr;
}

bool Measured(const CellResult* c) { return c != nullptr && c->status.ok() && c->us > 0; }

std::string Micros(const CellResult* c) {
  if (c == nullptr) return "-";
  if (c->wrong) return "**FAIL**";
  if (IsNotApplicable(*c)) return "n/a";
  if (!Measured(c)) return "err";
  return c->us < 10 ? absl::StrFormat("%.2f", c->us) : absl::StrFormat("%.1f", c->us);
}

double TflopsOf(const CaseResult& r, const CellResult* c) {
  return Measured(c) ? Flops(r.bench_case.problem) / (c->us * 1e-6) / 1e12 : -1;
}
double TbpsOf(const CaseResult& r, const CellResult* c) {
  return Measured(c) ? BytesMoved(r.bench_case.problem) / (c->us * 1e-6) / 1e12 : -1;
}

std::string Throughput(const CaseResult& r, const CellResult* c) {
  if (!Measured(c)) return "-";
  if (r.bench_case.memory_bound) return absl::StrFormat("%.2f", TbpsOf(r, c));
  const double t = TflopsOf(r, c);
  return t >= 100 ? absl::StrFormat("%.0f", t) : absl::StrFormat("%.1f", t);
}

std::string Speedup(const CellResult* base, const CellResult* col) {
  if (!Measured(base) || !Measured(col)) return "-";
  return absl::StrFormat("%.2fx", base->us / col->us);
}

// auto against cublas_mm in one regime: 0 streaming, 1 resident.
double RegimeUs(const CellResult* c, int regime) {
  if (!Measured(c)) return -1;
  return regime == 0 ? c->us_streaming : c->us_resident;
}
std::string RegimeSpeedup(const CaseResult& r, int regime) {
  const double base = RegimeUs(Find(r, Impl::kCublasMm), regime);
  const double col = RegimeUs(Find(r, Impl::kAuto), regime);
  if (base <= 0 || col <= 0) return "-";
  return absl::StrFormat("%.2fx", base / col);
}
bool AnyRegimes(const std::vector<const CaseResult*>& rows) {
  for (const CaseResult* r : rows) {
    for (const CellResult& c : r->cells) {
      if (c.us_streaming >= 0 || c.us_resident >= 0) return true;
    }
  }
  return false;
}

// The columns of a suite, in the order its cases list them.
std::vector<Impl> SuiteImpls(const std::vector<const CaseResult*>& rows) {
  std::vector<Impl> impls;
  for (const CaseResult* r : rows) {
    for (const CellResult& c : r->cells) {
      if (std::find(impls.begin(), impls.end(), c.impl) == impls.end()) impls.push_back(c.impl);
    }
  }
  return impls;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}, {"\n", " "}}), "\"");
}

}  // namespace

void PrintTables(const std::vector<CaseResult>& results, std::FILE* out) {
  std::vector<std::string> suites;
  for (const CaseResult& r : results) {
    if (std::find(suites.begin(), suites.end(), r.bench_case.suite) == suites.end()) {
      suites.push_back(r.bench_case.suite);
    }
  }
  for (const std::string& suite : suites) {
    std::vector<const CaseResult*> rows;
    for (const CaseResult& r : results) {
      if (r.bench_case.suite == suite) rows.push_back(&r);
    }
    const std::vector<Impl> impls = SuiteImpls(rows);
    std::vector<Impl> baselines, ours;
    for (Impl i : impls) (IsBaseline(i) ? baselines : ours).push_back(i);
    const bool memory_bound = rows.front()->bench_case.memory_bound;

    std::vector<std::string> header = {"problem"};
    for (Impl i : impls) header.push_back(absl::StrCat(ImplName(i), " µs"));
    std::vector<std::string> names;
    for (Impl i : impls) names.push_back(ImplName(i));
    header.push_back(
        absl::StrCat(memory_bound ? "TB/s " : "TFLOP/s ", absl::StrJoin(names, " / ")));
    for (Impl o : ours) {
      for (Impl b : baselines) header.push_back(absl::StrCat(ImplName(o), " vs ", ImplName(b)));
    }
    const bool regimes = AnyRegimes(rows);
    if (regimes) {
      header.push_back("auto vs cublas_mm streaming");
      header.push_back("auto vs cublas_mm resident");
    }
    header.push_back("auto picked");

    std::fprintf(out, "\n### %s\n\n| %s |\n|", suite.c_str(), absl::StrJoin(header, " | ").c_str());
    for (size_t i = 0; i < header.size(); ++i) std::fprintf(out, " --- |");
    std::fprintf(out, "\n");
    for (const CaseResult* r : rows) {
      std::vector<std::string> cells = {r->bench_case.label};
      if (r->rotate > 1) absl::StrAppend(&cells[0], " (W x", r->rotate, ")");
      if (!r->status.ok()) {
        cells.push_back(absl::StrCat("setup failed: ", r->status.message()));
        std::fprintf(out, "| %s |\n", absl::StrJoin(cells, " | ").c_str());
        continue;
      }
      std::vector<std::string> tput;
      for (Impl i : impls) {
        cells.push_back(Micros(Find(*r, i)));
        tput.push_back(Throughput(*r, Find(*r, i)));
      }
      cells.push_back(absl::StrJoin(tput, " / "));
      for (Impl o : ours) {
        for (Impl b : baselines) cells.push_back(Speedup(Find(*r, b), Find(*r, o)));
      }
      if (regimes) {
        cells.push_back(RegimeSpeedup(*r, 0));
        cells.push_back(RegimeSpeedup(*r, 1));
      }
      const CellResult* picked = Find(*r, Impl::kAuto);
      std::string plan = picked != nullptr && !picked->plan.empty() ? picked->plan : "-";
      if (plan.size() > 64) plan = plan.substr(0, 61) + "...";  // the CSV has all of it
      cells.push_back(plan);
      std::fprintf(out, "| %s |\n", absl::StrJoin(cells, " | ").c_str());
    }
  }

  bool any = false;
  for (const CaseResult& r : results) {
    for (const CellResult& c : r.cells) {
      if (c.status.ok()) continue;
      if (!any) std::fprintf(out, "\n### Failures, errors and columns that do not apply\n\n");
      any = true;
      std::fprintf(out, "- %s %s %s: %s\n", r.bench_case.suite.c_str(), r.bench_case.label.c_str(),
                   ImplName(c.impl), c.status.ToString().c_str());
    }
  }
  std::fprintf(out, "\n");
}

std::string CsvText(const std::vector<CaseResult>& results) {
  const Impl kBaselines[] = {Impl::kCublasMm, Impl::kCublasLoop, Impl::kAddmmAct, Impl::kLtBiasAct};
  std::string csv =
      "suite,problem,dtype,m,n,k,batch,rotate,impl,status,us_per_call,us_min,us_max,us_streaming,"
      "us_resident,tflops,tbps,"
      "rel_err,"
      "tolerance";
  for (Impl b : kBaselines) absl::StrAppend(&csv, ",speedup_vs_", ImplName(b));
  absl::StrAppend(&csv, ",plan,plan_create_ms,message\n");
  for (const CaseResult& r : results) {
    const GemmProblem& p = r.bench_case.problem;
    const char* dtype =
        p.a.type == DataType::kF32 ? "f32" : (p.a.type == DataType::kF16 ? "f16" : "bf16");
    const std::string prefix = absl::StrFormat(
        "%s,%s,%s,%d,%d,%d,%d,%d", CsvField(r.bench_case.suite), CsvField(r.bench_case.label),
        dtype, p.m, p.n, p.k, p.batch_count, r.rotate);
    if (!r.status.ok()) {
      // impl, status, 9 figures, 4 speedups, plan, create time, message.
      absl::StrAppend(&csv, prefix, ",", ",setup_error", ",,,,,,,,,", ",,,,", ",,", ",",
                      CsvField(r.status.ToString()), "\n");
      continue;
    }
    for (const CellResult& c : r.cells) {
      const std::string status =
          c.status.ok() ? "ok" : (c.wrong ? "wrong" : (IsNotApplicable(c) ? "n/a" : "error"));
      absl::StrAppend(&csv, prefix, ",", ImplName(c.impl), ",", status, ",");
      absl::StrAppend(&csv, Measured(&c) ? absl::StrFormat("%.3f", c.us) : "", ",");
      absl::StrAppend(&csv, Measured(&c) ? absl::StrFormat("%.3f", c.us_min) : "", ",");
      absl::StrAppend(&csv, Measured(&c) ? absl::StrFormat("%.3f", c.us_max) : "", ",");
      absl::StrAppend(&csv, c.us_streaming >= 0 ? absl::StrFormat("%.3f", c.us_streaming) : "",
                      ",");
      absl::StrAppend(&csv, c.us_resident >= 0 ? absl::StrFormat("%.3f", c.us_resident) : "", ",");
      absl::StrAppend(&csv, Measured(&c) ? absl::StrFormat("%.2f", TflopsOf(r, &c)) : "", ",");
      absl::StrAppend(&csv, Measured(&c) ? absl::StrFormat("%.3f", TbpsOf(r, &c)) : "", ",");
      absl::StrAppend(&csv, c.rel_err >= 0 ? absl::StrFormat("%.3e", c.rel_err) : "", ",");
      absl::StrAppend(&csv, absl::StrFormat("%.0e", c.tolerance));
      for (Impl b : kBaselines) {
        const CellResult* base = Find(r, b);
        absl::StrAppend(
            &csv, ",",
            Measured(base) && Measured(&c) ? absl::StrFormat("%.4f", base->us / c.us) : "");
      }
      absl::StrAppend(&csv, ",", CsvField(c.plan), ",",
                      c.create_ms >= 0 ? absl::StrFormat("%.1f", c.create_ms) : "", ",",
                      c.status.ok() ? "" : CsvField(c.status.ToString()), "\n");
    }
  }
  return csv;
}

absl::Status WriteCsv(const std::vector<CaseResult>& results, const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  f << CsvText(results);
  f.close();
  if (!f) return absl::DataLossError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

}  // namespace jitgemm::bench
