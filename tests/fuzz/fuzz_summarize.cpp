// libFuzzer harness: summarize's readers (sim/analysis/summarize.hpp). The input is a sweep
// folder's sweep.csv, then, after a line "----", the metrics.csv and, after another, the
// summary.json of its one point folder "p". Any input must either be summarized or throw IoError
// (exit 2), and the summary's files must be the same bytes when summarized twice. Run through
// tools/fuzz.
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "sim/analysis/summarize.hpp"
#include "sim/output/outputs.hpp"
#include "tests/fuzz/fuzz_parts.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& folder() {
  static const stalesim::fuzz::ScratchFolder dir("summarize", "p");
  return dir.path();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = stalesim::fuzz::parts_of(std::string_view(reinterpret_cast<const char*>(data), size), 3);
  const fs::path files[] = {folder() / "sweep.csv", folder() / "p" / "metrics.csv",
                            folder() / "p" / "summary.json"};
  for (size_t i = 0; i < 3; ++i) {
    std::error_code ec;
    fs::remove(files[i], ec);
    if (i < parts.size()) std::ofstream(files[i], std::ios::binary) << parts[i];
  }
  try {
    const stalesim::SweepSummary a = stalesim::summarize_sweep(folder().string());
    const stalesim::SweepSummary b = stalesim::summarize_sweep(folder().string());
    if (a.summary_csv != b.summary_csv || a.curves_csv != b.curves_csv || a.table != b.table) std::abort();
    if (a.points_with_result > a.points) std::abort();
  } catch (const stalesim::IoError&) {
  }
  return 0;
}
