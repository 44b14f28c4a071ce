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
#include <sstream>
#include <string>

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

// Peak resident memory of one `stalesim run SCENARIO --out OUT --force --quiet`, in bytes: wait4's
// ru_maxrss of that process alone (no shell in between, so nothing else is counted); -1 when it
// did not exit 0.
inline double peak_rss_of_run(const std::filesystem::path& scenario, const std::filesystem::path& out) {
  const std::string bin = STALESIM_BINARY, sc = scenario.string(), o = out.string();
  std::fflush(nullptr);  // the child must not write this process's buffered output again
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) ::_exit(97);
    ::execl(bin.c_str(), bin.c_str(), "run", sc.c_str(), "--out", o.c_str(), "--force", "--quiet",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage ru {};
  ::wait4(pid, &status, 0, &ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return static_cast<double>(ru.ru_maxrss) * 1024.0;  // Linux: KiB
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
