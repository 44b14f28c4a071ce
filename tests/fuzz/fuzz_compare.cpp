// libFuzzer harness: compare's reader of a run folder (sim/analysis/compare.hpp). The input is the
// folder's files separated by lines "----": summary.json, staleness.csv, metrics.csv and, when a
// fourth part is there, gradients.csv. Any input must either be read or throw IoError (exit 2); a
// run that is read must compare with itself and print a table without throwing, with every figure
// finite or n/a. Run through tools/fuzz.
#include <unistd.h>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/analysis/compare.hpp"
#include "sim/output/outputs.hpp"
#include "tests/fuzz/fuzz_parts.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& folder() {
  static const stalesim::fuzz::ScratchFolder dir("compare");
  return dir.path();
}

// Whether every number in `j` is finite (a NaN or infinity would print as a figure).
bool all_finite(const nlohmann::json& j) {
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_structured())
    for (const auto& v : j)
      if (!all_finite(v)) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = stalesim::fuzz::parts_of(std::string_view(reinterpret_cast<const char*>(data), size), 4);
  const char* names[] = {"summary.json", "staleness.csv", "metrics.csv", "gradients.csv"};
  for (size_t i = 0; i < 4; ++i) {
    std::error_code ec;
    fs::remove(folder() / names[i], ec);
    if (i < parts.size()) std::ofstream(folder() / names[i], std::ios::binary) << parts[i];
  }
  try {
    const stalesim::ComparedRun run = stalesim::read_compared_run(folder().string());
    const nlohmann::json c = stalesim::compare_runs(run, {run});
    if (!all_finite(c)) std::abort();
    const std::string table = stalesim::compare_table(c) + stalesim::compare_row(c, "fuzz");
    for (char ch : table)
      if (ch == '\x1b') std::abort();  // text from the files reaches the terminal escaped
  } catch (const stalesim::IoError&) {
  }
  return 0;
}
