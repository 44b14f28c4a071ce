#pragma once
// Reproduction of a finished run (DESIGN.md section 2, rule 6; REFERENCE.md "Sweeps and reproduction"):
// rebuild the scenario from a run folder's summary.json manifest, run it again, and compare every
// file the run writes with the folder's, byte for byte.
//
// The manifest's build fields (stalesim_version, git_revision, compiler, build_type, flags, isa,
// eigen) describe the binary, not the run: when they differ from this binary's they are reported
// as a warning, and the rerun's summary.json is compared with them set to the recorded values, so
// that a difference is always a difference of results. Dataset files are checksummed again and a
// changed or missing file is reported before the rerun.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/output/outputs.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulation.hpp"

namespace stalesim {

// The first difference between the recorded text of a file and the rerun's.
struct FileDifference {
  std::string file;               // "metrics.csv"
  int64_t line = 0;               // 1-based; 0 when the whole file is missing on one side
  std::string where;              // CSV: the column name ("header" for the header line); JSON: the JSON
                                  // pointer of the first differing value; else ""
  std::string expected;           // the recorded line (CSV: cell), or "" past its end
  std::string got;                // the rerun's
  bool expected_missing = false;  // the recorded folder lacks the file, or the line (end of file)
  bool got_missing = false;       // the rerun does not write the file, or the line
  bool operator==(const FileDifference&) const = default;
};

// "metrics.csv: first difference at line 5 (test_loss): expected '0.53', got '0.54'"; lines are
// shortened to 120 characters.
std::string describe(const FileDifference& d);

// The first difference between two texts of `file`, or nullopt when they are identical. The file
// name decides the detail: ".csv" names the column (from the expected header), ".json" the JSON
// pointer (when both texts parse).
std::optional<FileDifference> first_difference(std::string_view file, std::string_view expected,
                                               std::string_view got);

// Where the manifest's build differs from this binary's: "isa x86-64-v3 vs x86-64-v2" (recorded
// value first), one entry per differing field.
std::vector<std::string> build_differences(const nlohmann::json& manifest);

// Dataset files of the manifest ("datasets": [{path, bytes, xxh64}]) that are missing or whose
// size or XXH64 differ now, in words, one entry per file. Throws IoError naming the entry
// ("/manifest/datasets/0: expected ...") when one is not {path, bytes, xxh64}.
std::vector<std::string> dataset_changes(const nlohmann::json& manifest);

struct Reproduction {
  std::string summary_path;  // DIR/summary.json
  std::string dir;           // DIR
  nlohmann::json summary;    // as recorded
  Scenario scenario;         // from manifest.scenario
  std::vector<std::string> build_differences;
  std::vector<std::string> dataset_changes;
};

// Reads a run's summary.json (`path` may also name its folder) and rebuilds its scenario. Throws
// IoError when the file is unreadable, is not a run's summary, or records an interrupted run
// (nothing finished to compare), and ScenarioError naming the file when manifest.scenario is
// invalid for this build.
Reproduction prepare_reproduction(const std::string& path);

struct ReproduceResult {
  RunStatus status = RunStatus::kCompleted;  // of the rerun
  std::string result_hash;                   // of the rerun
  std::vector<std::string> compared;         // file names, in comparison order
  std::vector<FileDifference> differences;   // empty: MATCH
  OutputFiles files;                         // the rerun's files, as written (reproduce --out keeps them)
  std::vector<std::string> renamed;          // files recorded under the older names, compared
                                             // under the current ones (sim/output/names.hpp)
};

// Reruns the scenario (data loaded here; DataError when missing), writes its outputs through
// write_outputs into a temporary folder, and compares every file it writes that the output table
// marks compared (sim/output/output_table.hpp), in the table's order, with the recorded folder's. A .csv or
// .json file in the folder that the rerun does not write is a difference too. REQUIRES:
// pin_eigen_cache_sizes() was called.
ReproduceResult reproduce(const Reproduction& r, const RunOptions& options = {});

}  // namespace stalesim
