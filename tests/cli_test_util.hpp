#pragma once
// Running the real stalesim binary from tests: one helper for test_cli, test_errors,
// test_reproduce and test_sweep (STALESIM_SOURCE_DIR and STALESIM_BINARY come from CMake).

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/output/output_table.hpp"

namespace stalesim::testing {

// `s` single-quoted for the shell commands run_cli runs (the tests' paths hold no quote).
inline std::string q(const std::string& s) { return "'" + s + "'"; }

// Whether this is an AddressSanitizer build: its shadow memory and quarantine inflate peak RSS
// several-fold and reserve terabytes of address space, so memory-limit checks run in the Release
// pass only.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// The files a plain run writes (no recorder asked for: every row of the output table written
// always, and the done marker), in the table's order, as `reproduce` lists them
// ("summary.json, metrics.csv, staleness.csv, done").
inline std::vector<std::string> plain_run_files() {
  std::vector<std::string> names;
  for (const auto& row : output_table())
    if (row.when == Written::kAlways || row.when == Written::kWhenFinished) names.emplace_back(row.name);
  return names;
}
inline std::string plain_run_files_listed() {
  std::string listed;
  for (const auto& name : plain_run_files()) listed += (listed.empty() ? "" : ", ") + name;
  return listed;
}

struct Outcome {
  int code = -1;  // the exit status; -1 when the process did not exit normally
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `prefix` (environment assignments or a launcher such as mpirun, with a trailing space)
// followed by the binary and `args` (shell words), from the source folder, with no standard input.
// Unless `prefix` sets the cache folder itself, XDG_CACHE_HOME is the build folder's test-cache/
// (STALESIM_TEST_CACHE_DIR): `validate` measures this machine once for the whole suite there, never
// in the user's own ~/.cache.
inline Outcome run_cli(const std::string& args, const std::string& prefix_given = "") {
  std::string prefix = prefix_given;
#ifdef STALESIM_TEST_CACHE_DIR
  if (prefix.find("XDG_CACHE_HOME") == std::string::npos)
    prefix = std::string("export XDG_CACHE_HOME=") + q(STALESIM_TEST_CACHE_DIR) + "; " + prefix;
#endif
  namespace fs = std::filesystem;
  static int n = 0;
  const fs::path tmp =
      fs::temp_directory_path() / ("stalesim-run-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  fs::create_directories(tmp);
  const std::string cmd = std::string("cd '") + STALESIM_SOURCE_DIR + "' && " + prefix + "'" +
                          STALESIM_BINARY + "' " + args + " >'" + (tmp / "out").string() + "' 2>'" +
                          (tmp / "err").string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = slurp(tmp / "out");
  o.err = slurp(tmp / "err");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return o;
}

// What one `stalesim run SCENARIO --out OUT --force --quiet` used: wait4's rusage of that process
// alone (no shell in between, so nothing else is counted): its peak resident memory in bytes and
// its CPU seconds (user + system); both -1 when it did not exit 0. `threads` > 0: passed as --threads.
struct RunUsage {
  double peak_rss = -1;
  double cpu_s = -1;
};
inline RunUsage usage_of_run(const std::filesystem::path& scenario, const std::filesystem::path& out,
                             int threads = 0) {
  const std::string bin = STALESIM_BINARY, sc = scenario.string(), o = out.string();
  const std::string t = std::to_string(threads);
  std::fflush(nullptr);  // the child must not write this process's buffered output again
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) ::_exit(97);
    if (threads > 0)
      ::execl(bin.c_str(), bin.c_str(), "run", sc.c_str(), "--out", o.c_str(), "--force", "--quiet",
              "--threads", t.c_str(), static_cast<char*>(nullptr));
    else
      ::execl(bin.c_str(), bin.c_str(), "run", sc.c_str(), "--out", o.c_str(), "--force", "--quiet",
              static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage ru {};
  ::wait4(pid, &status, 0, &ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return {static_cast<double>(ru.ru_maxrss) * 1024.0,  // Linux: KiB
          seconds(ru.ru_utime) + seconds(ru.ru_stime)};
}

// Peak resident memory of one run (usage_of_run), in bytes; -1 when it did not exit 0.
inline double peak_rss_of_run(const std::filesystem::path& scenario, const std::filesystem::path& out,
                              int threads = 0) {
  return usage_of_run(scenario, out, threads).peak_rss;
}

// This machine's name, as stalesim's temporaries' markers record it (sim/output/run_folder.hpp).
inline std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// Every entry under `root` (not following links) with its type and, for files, its contents;
// entries under `skip` (the output folder) are left out.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& root,
                                                   const std::filesystem::path& skip = {}) {
  std::map<std::string, std::string> out;
  for (auto it = std::filesystem::recursive_directory_iterator(root);
       it != std::filesystem::recursive_directory_iterator(); ++it) {
    const std::filesystem::path p = it->path();
    if (!skip.empty() && (p == skip || p.string().starts_with(skip.string() + "/"))) {
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    const auto st = std::filesystem::symlink_status(p);
    std::string v;
    if (st.type() == std::filesystem::file_type::symlink)
      v = "link:" + std::filesystem::read_symlink(p).string();
    else if (st.type() == std::filesystem::file_type::regular)  // a huge (sparse) file by its size only
      v = std::filesystem::file_size(p) > (1u << 20) ? "big:" + std::to_string(std::filesystem::file_size(p))
                                                     : "file:" + slurp(p);
    else if (st.type() == std::filesystem::file_type::directory)
      v = "dir";
    else
      v = "other";
    out[std::filesystem::relative(p, root).string()] = v;
  }
  return out;
}

// The PID of a process that has ended.
inline pid_t dead_pid() {
  std::fflush(nullptr);  // the child must not write this process's buffered output again
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int st = 0;
  ::waitpid(p, &st, 0);
  return p;
}

// Rows of cells as CSV text, one line each, cells joined by commas as given (no quoting: tests
// write forged files with it).
inline std::string csv_text(const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + r[i];
    out += "\n";
  }
  return out;
}

inline bool has(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// A fresh scratch folder under the system's temporary folder, removed by the destructor.
struct Scratch {
  std::filesystem::path path;
  explicit Scratch(const std::string& name, const std::string& tag = "scratch") {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           ("stalesim-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + "-" + name);
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // Writes `text` to path/name (creating folders on the way) and returns that path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::filesystem::create_directories((path / name).parent_path());
    std::ofstream(path / name, std::ios::binary) << text;
    return path / name;
  }
  std::string str() const { return path.string(); }
};

}  // namespace stalesim::testing
