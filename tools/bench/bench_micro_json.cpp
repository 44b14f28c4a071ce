// Micro-benchmarks joined into the summary: stalesim_bench_micro's Google Benchmark JSON (event
// queue, MLP and CNN gradients against SGEMM), read back and judged against issue 9's targets.

#include "tools/bench/bench.hpp"

#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace stalesim::bench {

namespace {

// run name -> the median aggregate (or the single run when there are no repetitions).
std::map<std::string, json> read_micro(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot read");
  const json doc = json::parse(f);
  std::map<std::string, json> out;
  for (const auto& b : doc.at("benchmarks")) {
    const std::string name = b.value("run_name", b.at("name").get<std::string>());
    if (b.value("run_type", "iteration") == "aggregate") {
      if (b.value("aggregate_name", "") == "median") out[name] = b;
    } else if (!out.count(name)) {
      out[name] = b;
    }
  }
  return out;
}

}  // namespace

void section_micro(const Options& opt, std::vector<SummaryRow>& summary) {
  const auto micro = read_micro(opt.micro_json);
  auto get = [&](const std::string& name, const char* field) {
    const auto it = micro.find(name);
    if (it == micro.end() || !it->second.contains(field))
      throw std::runtime_error(opt.micro_json + ": no " + field + " for " + name);
    return it->second.at(field).get<double>();
  };
  fmt::print(
      "\n=== Micro-benchmarks (stalesim_bench_micro; medians of its repetitions, per CPU second) ===\n");
  std::vector<std::vector<std::string>> rows;
  for (int pending : {1'000, 100'000}) {
    const double eps = get(fmt::format("engine_steady_state/pending:{}", pending), "items_per_second");
    rows.push_back({fmt::format("event queue, {} pending", grouped(pending)),
                    fmt::format("{:.2f} M events/s", eps / 1e6)});
  }
  auto sgemm_name = [](int m, int k, int n) { return fmt::format("eigen_sgemm/m:{}/k:{}/n:{}", m, k, n); };
  const double ceiling = get(sgemm_name(512, 512, 512), "flops");
  for (int b : {1, 32, 128}) {
    const std::string mlp = fmt::format("mlp_gradient/batch:{}", b);
    const double nominal = get(mlp, "flops_nominal"), performed = get(mlp, "flops_performed");
    const double sgemm = get(sgemm_name(200, 784, b), "flops");
    rows.push_back({fmt::format("MLP 784-200-10 gradient, batch {}", b),
                    fmt::format("{:.1f} GFLOP/s nominal, {:.1f} performed", nominal / 1e9, performed / 1e9)});
    rows.push_back(
        {fmt::format("Eigen SGEMM 200x784 * 784x{}", b), fmt::format("{:.1f} GFLOP/s", sgemm / 1e9)});
  }
  for (int b : {32, 128}) {  // absent from JSON written before the CNN was benchmarked
    const std::string cnn = fmt::format("cnn_gradient/batch:{}", b);
    if (!micro.count(cnn)) continue;
    rows.push_back({fmt::format("CNN (LeNet-5, 28x28) gradient, batch {}", b),
                    fmt::format("{:.1f} GFLOP/s nominal", get(cnn, "flops_nominal") / 1e9)});
  }
  rows.push_back({"Eigen SGEMM 512^3 (ceiling)", fmt::format("{:.1f} GFLOP/s", ceiling / 1e9)});
  print_table({"benchmark", "median"}, rows, {false, true});
  fmt::print(
      "nominal FLOPs = Model::flops_per_sample() x batch (6 x weights); performed = the GEMM FLOPs the\n"
      "code does (it skips the first layer's input gradient: 4 x weights + 2 x 200 x 10 per sample).\n");

  const double eps = get("engine_steady_state/pending:1000", "items_per_second");
  summary.push_back(target_row("Bare event queue, 1,000 pending: events per CPU second", eps,
                               fmt::format("{:.2f} M/s", eps / 1e6), 5e6, ">= 5 M/s", true));
  const double eps_big = get("engine_steady_state/pending:100000", "items_per_second");
  summary.push_back({"Bare event queue, 100,000 pending: events per CPU second",
                     fmt::format("{:.2f} M/s", eps_big / 1e6), "(none)", "", Verdict::kInfo});
  for (int b : {32, 128}) {
    const std::string mlp = fmt::format("mlp_gradient/batch:{}", b);
    const double nominal = get(mlp, "flops_nominal"), performed = get(mlp, "flops_performed");
    const double same = get(sgemm_name(200, 784, b), "flops");
    summary.push_back(
        target_row(fmt::format("MLP gradient b={} (nominal FLOPs) / SGEMM 200x784x{}", b, b), nominal / same,
                   fmt::format("{:.2f} ({:.1f}/{:.1f} GFLOP/s)", nominal / same, nominal / 1e9, same / 1e9),
                   0.5, ">= 0.50", true));
    summary.push_back(target_row(
        fmt::format("MLP gradient b={} (nominal FLOPs) / SGEMM 512^3", b), nominal / ceiling,
        fmt::format("{:.2f} ({:.1f}/{:.1f} GFLOP/s)", nominal / ceiling, nominal / 1e9, ceiling / 1e9), 0.5,
        ">= 0.50", true));
    summary.push_back({fmt::format("MLP gradient b={} (performed FLOPs) / SGEMM 200x784x{}", b, b),
                       fmt::format("{:.2f}", performed / same), "(same target, other count)", "",
                       Verdict::kInfo});
  }
  for (int b : {32, 128}) {
    const std::string cnn = fmt::format("cnn_gradient/batch:{}", b);
    if (!micro.count(cnn)) continue;
    const double nominal = get(cnn, "flops_nominal");
    summary.push_back(
        {fmt::format("CNN gradient b={} (nominal FLOPs) / SGEMM 512^3", b),
         fmt::format("{:.2f} ({:.1f}/{:.1f} GFLOP/s)", nominal / ceiling, nominal / 1e9, ceiling / 1e9),
         "(none)", "", Verdict::kInfo});
  }
}

}  // namespace stalesim::bench
