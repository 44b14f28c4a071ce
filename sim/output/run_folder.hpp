#pragma once
// Output folders that never destroy what is not ours (REFERENCE.md "Safety and errors").
//
// A run folder holds only the files a run writes (the output table) and a summary.json whose manifest
// names stalesim; a sweep folder holds a sweep.json manifest, sweep.csv and run folders. --force
// replaces only such a folder, or an empty one, and never a protected place (a filesystem root,
// the home folder, the working directory, a checkout, or any folder above these or above the
// scenario file). Replacing is crash-safe: the new run is written to a hidden sibling
// temporary (below) and swapped in with one atomic rename (Linux renameat2 RENAME_EXCHANGE), so
// a SIGKILL at any instant leaves the old complete run or the new complete run under NAME. Hidden
// siblings left by a process that was killed are cleaned up by the next write to the same NAME.

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/output/outputs.hpp"

namespace stalesim {

// Every file a run folder may hold is a row of the output table (sim/output/output_table.hpp),
// plots.list among them: the files our plot scripts wrote into the folder (plots/stalesim_runs.py),
// one name a line; those files are the run's too (inspect_folder), recognised by that record, not
// by name.

// A report folder (`stalesim report`) holds kReportManifest, a JSON object with "stalesim_report"
// (the version) and "files" (every other file it holds, report.html and the figures), and only
// those files. It may stand inside a sweep folder without breaking the sweep's resume.
inline constexpr std::string_view kReportManifest = "report.json";

// Every file a sweep folder may hold besides its run folders: the manifest, the table, and what
// `stalesim summarize` writes there.
inline constexpr std::array<std::string_view, 4> kSweepFiles = {"sweep.json", "sweep.csv",
                                                                "sweep-summary.csv", "curves.csv"};

// The files our plot scripts wrote into the run or sweep folder `dir`, as its plots.list records
// them (plots/stalesim_runs.py), one bare file name a line; empty when there is none.
std::vector<std::string> recorded_plots(const std::filesystem::path& dir);

enum class FolderKind {
  kAbsent,  // nothing at the path
  kEmpty,   // an empty folder
  kRun,     // a stalesim run folder (finished or not)
  kSweep,   // a stalesim sweep folder
  kReport,  // a `stalesim report` folder: report.json (naming stalesim_report and its files) and those files
  kOther,   // anything else: a file, a link to a non-folder, a folder holding other things
};

struct FolderCheck {
  FolderKind kind = FolderKind::kAbsent;
  std::string why;  // kOther: what makes it foreign, in words ("holds 'notes.txt'")
};

// What is at `path` (not following a final symbolic link; see resolve_output_path).
FolderCheck inspect_folder(const std::filesystem::path& path);

// The folder `dir` names, as the writer will use it: absolute, lexically normal, without a
// trailing separator, and with a final symbolic link to a folder resolved (the link is kept and
// its target written). Throws IoError for an empty path and for a dangling link.
std::filesystem::path resolve_output_path(const std::string& dir);

// Throws IoError (naming `dir` and the reason) when --force must not replace `target`: a
// filesystem root, the home folder (`home`: $HOME, which the CLI reads; empty: none), the working
// directory, a git checkout, or a folder holding any of them or any of `protect` (e.g. the
// scenario file).
void refuse_protected(const std::string& dir, const std::filesystem::path& target,
                      const std::vector<std::filesystem::path>& protect,
                      const std::filesystem::path& home = {});

// stalesim's own temporaries. Each is a hidden folder `.stalesim-KIND-PID-TOKEN` (KIND partial,
// probe or tmp; TOKEN 16 random hex digits) beside the thing it is for, holding a marker file
// `.stalesim-temporary` whose JSON repeats the kind, PID and token and names the TARGET entry it
// is for. Only a folder whose name and marker agree is stalesim's: an entry is never taken for
// ours by its name alone, so a user's `.photos.old-2023/` or `.myrun.partial-7` is foreign and
// is never deleted or moved. The name does not grow with TARGET, so a target name of 255 bytes
// still has a temporary.
// The marker also names the machine (`host`): a temporary is taken for dead only when made on this
// machine by a process no longer alive (a folder shared over NFS holds other machines' live
// ones). TOKEN's first 8 hex digits tag the machine, so that a folder killed between its mkdir
// and its marker (which is written beside and renamed, so it appears whole or not at all) is
// recognised as this machine's, and removed when it holds nothing.
struct Temporary {
  std::filesystem::path path;
  std::string kind;    // partial, probe or tmp
  long pid = 0;        // the process that made it
  std::string target;  // the entry of the same folder it is for
  std::string host;    // the machine it was made on ("" from an older stalesim: never taken for dead)
};

// `path` as one of our temporaries, or nullopt when it is not provably ours.
std::optional<Temporary> our_temporary(const std::filesystem::path& path);

// Creates a temporary of this process in `parent` for `target` and returns its path. Throws
// IoError ("PARENT: cannot write here: REASON").
std::filesystem::path create_temporary(const std::filesystem::path& parent, std::string_view kind,
                                       const std::string& target);

// Removes the temporaries left in `parent` by processes no longer alive, for the entry `name`
// (empty: for every entry, e.g. a sweep folder's points, in one pass). When `name` is missing and
// a dead process's temporary holds the old run it had moved aside (`old`, the two-rename
// replace below, killed between its renames), that run is first restored under the name. Never
// touches anything that is not provably ours.
void clean_stale_temporaries(const std::filesystem::path& parent, const std::string& name);

// Writes `contents` to `path` (created or truncated). Throws IoError with the OS reason
// ("No space left on device").
void write_text_file(const std::filesystem::path& path, std::string_view contents);

// Moves the complete run folder TEMPORARY/run to `target` (`temporary` from create_temporary, in
// the same folder as `target`) and removes the temporary: when `target` exists it is swapped
// atomically and what was swapped out is checked again (a run folder or an empty one, as before
// the run; else it is swapped back and IoError says so) before it goes with the temporary; else
// renamed, never over an entry another process created meanwhile (RENAME_NOREPLACE). `checkpoint(step)` is
// called between steps (a test hook that may kill the process). Throws IoError with the OS reason.
void install_folder(const std::filesystem::path& temporary, const std::filesystem::path& target,
                    const std::function<void(std::string_view)>& checkpoint = {});

// install_folder's way where the filesystem has no atomic exchange: TARGET to TEMPORARY/old, then
// TEMPORARY/run to TARGET. What was moved aside is checked again (a run folder or an empty one,
// else it is put back and IoError says so); when the new run cannot go in, the old one is put
// back, and when that fails too it stays in TEMPORARY/old (the IoError names it) for
// clean_stale_temporaries to restore: callers discard the temporary with discard_temporary.
void install_by_renames(const std::filesystem::path& temporary, const std::filesystem::path& target,
                        const std::function<void(std::string_view)>& checkpoint = {});

// Removes a temporary after a failed install, except an old run kept in it (TEMPORARY/old).
void discard_temporary(const std::filesystem::path& temporary);

// Writes `contents` to the file `path` without a check-then-write race: written into a temporary
// beside it, then renamed in where nothing is (RENAME_NOREPLACE); an existing file is replaced only
// when `ours(path)` says it is ours, and is checked again after the atomic exchange (put back if it
// changed meanwhile). A symbolic link at `path` is replaced only if `ours` accepts it (so `ours`
// should not follow links). Throws IoError ("PATH: exists and is not ours; nothing was written").
void replace_file_checked(const std::filesystem::path& path, std::string_view contents,
                          const std::function<bool(const std::filesystem::path&)>& ours);

// Moves the files of TEMPORARY/run into `target`, an existing empty folder that `temporary`
// lies in, one rename each (summary.json first, done last), and removes the temporary. The
// folder itself stays (it may be the shell's working directory, or its parent may not be
// writable); a kill midway leaves an unfinished run (no done marker) that --force replaces. Holds
// an flock on the folder meanwhile and checks under it that no other writer put a run there (two
// runs started into one empty folder: the second is refused, nothing mixed).
void install_in_place(const std::filesystem::path& temporary, const std::filesystem::path& target,
                      const std::function<void(std::string_view)>& checkpoint = {});

}  // namespace stalesim
