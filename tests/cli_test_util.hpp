#pragma once
// Running the real stalesim binary from tests: one helper for test_cli, test_errors,
// test_reproduce and test_sweep (STALESIM_SOURCE_DIR and STALESIM_BINARY come from CMake).

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stalesim::testing {

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
inline Outcome run_cli(const std::string& args, const std::string& prefix = "") {
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
