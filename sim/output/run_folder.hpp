#pragma once
// Output folders that never destroy what is not ours (REFERENCE.md "Safety and errors").
//
// A run folder holds only the files a run writes (kRunFiles) and a summary.json whose manifest
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

// Every file a run folder may hold.
inline constexpr std::array<std::string_view, 10> kRunFiles = {
    "summary.json", "metrics.csv", "staleness.csv", "decisions.csv", "gradients.csv",
    "trace.json",   "explain.txt", "timing.csv",    "links.csv",     "done"};

enum class FolderKind {
  kAbsent,  // nothing at the path
  kEmpty,   // an empty folder
  kRun,     // a stalesim run folder (finished or not)
  kSweep,   // a stalesim sweep folder
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
struct Temporary {
  std::filesystem::path path;
  std::string kind;    // partial, probe or tmp
  long pid = 0;        // the process that made it
  std::string target;  // the entry of the same folder it is for
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
// atomically and the old folder removed with the temporary; else renamed. `checkpoint(step)` is
// called between steps (a test hook that may kill the process). Throws IoError with the OS reason.
void install_folder(const std::filesystem::path& temporary, const std::filesystem::path& target,
                    const std::function<void(std::string_view)>& checkpoint = {});

// Moves the files of TEMPORARY/run into `target`, an existing empty folder that `temporary`
// lies in, one rename each (summary.json first, done last), and removes the temporary. The
// folder itself stays (it may be the shell's working directory, or its parent may not be
// writable); a kill midway leaves an unfinished run (no done marker) that --force replaces.
void install_in_place(const std::filesystem::path& temporary, const std::filesystem::path& target,
                      const std::function<void(std::string_view)>& checkpoint = {});

}  // namespace stalesim
