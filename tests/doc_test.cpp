// stalesim_doc_test: runs the commands that Markdown files give a user and checks what the text
// says about them (issue 20, "docs that run"). CTest runs README.md and then the tutorial, in one
// fresh folder, as one user's first hour would.
//
// Usage: stalesim_doc_test --root SOURCE_DIR --bin STALESIM --work DIR FILE.md...
//
// DIR is made fresh (it may exist only as a folder this program made: it holds .stalesim-doc-test)
// and given links to the checkout's scenarios/, tools/, plots/ and models/ and a build/stalesim
// that is the binary under test, so the commands run as printed, from "the checkout". Then the
// `build/stalesim ...` lines of tools/setup run in it, so the docs start from the state setup
// leaves (results/setup-quickstart/); XDG_CACHE_HOME is DIR/.cache (validate's measured rate).
//
// What the Markdown says, and how it is checked:
// - A ```sh (or bash) block: each line is a command (a line ending in \ continues), run with bash
//   in DIR, in document order; it must exit 0.
// - The first plain ``` block after an sh block, before the next heading or sh block: what those
//   commands print. Each of its lines must be a line of their output (stdout and stderr), where
//   `...` stands for any text and the number after "wall time" or "wall time about" for any number
//   (wall times are the only figures allowed to differ). A line that is `...` alone is skipped.
// - A plain block whose lines start with "$ ": commands, each followed by the lines it prints.
// - Directives, in an HTML comment on the line before a block:
//     <!-- doc-test: skip REASON -->        the block is not run; the reason is printed
//     <!-- doc-test: exit N -->             its commands must exit with N instead of 0
//     <!-- doc-test: needs SHELL-TEST -->   skipped (and said so) when `bash -c SHELL-TEST` fails
//     <!-- doc-test: text -->               a plain block that is not output
// - Every relative link must name a file inside the repository (users do not have anything else),
//   and every repository path in `code` (scenarios/, plots/, tools/, models/, sim/, tests/) must
//   exist.
// - A number in the prose followed by a comment <!--= SOURCE --> is checked against a file the
//   commands wrote, once every command of the file has run: the text's number must equal the
//   value rounded to as many decimals as the text shows (thousands separators allowed). SOURCE:
//     json FILE /json/pointer [mean] [xSCALE]   (mean: the pointer names an array of numbers, and
//                                               the value is their mean, summed in array order)
//     csv FILE COLUMN [KEY=VALUE]... [xSCALE] (the first row where every column KEY holds
//                                               VALUE; with no KEY=VALUE, the last row)
//     count FILE REGEX                          (the number of FILE's lines that match the
//                                               ECMAScript REGEX: counts the docs state about
//                                               themselves, such as their lessons)
//   FILE is relative to DIR; xSCALE multiplies the value (x100 for a fraction quoted in %). A
//   32-digit hex hash (a result_hash) before the comment must equal the value exactly.
//
// Exit 0 when every check passed, 1 when one failed (each failure is listed), 2 on bad usage.

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = ".stalesim-doc-test";

struct Failure {
  std::string where;
  std::string what;
};

struct Context {
  fs::path work;
  std::vector<Failure> failures;
  int commands = 0;
  int output_lines = 0;
  int numbers = 0;
  int skipped_blocks = 0;
  void fail(const std::string& where, const std::string& what) {
    failures.push_back({where, what});
    std::cout << "FAIL " << where << ": " << what << "\n";
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t'))
      line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Ran {
  int code = -1;
  std::string output;
};

// Runs one command with bash in the work folder, no standard input, stdout and stderr together.
Ran run_command(const Context& ctx, const std::string& command) {
  const fs::path out = ctx.work / ".doc-test-output";
  const std::string line = "cd " + shell_quote(ctx.work.string()) + " && bash -c " + shell_quote(command) +
                           " >" + shell_quote(out.string()) + " 2>&1 </dev/null";
  const int status = std::system(line.c_str());
  Ran r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = slurp(out);
  fs::remove(out);
  return r;
}

bool shell_test(const Context& ctx, const std::string& test) {
  const std::string line = "cd " + shell_quote(ctx.work.string()) + " && bash -c " + shell_quote(test) +
                           " >/dev/null 2>&1 </dev/null";
  const int status = std::system(line.c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// One expected output line as a regular expression: `...` is any text; the number after
// "wall time" (or "wall time about") is any number.
std::regex expected_pattern(const std::string& line) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  std::string rx;
  std::size_t i = 0;
  while (i < line.size()) {
    if (line.compare(i, 3, "...") == 0) {
      rx += ".*";
      i += 3;
      continue;
    }
    bool wall = false;
    for (const std::string lead : {"wall time about ", "wall time "}) {
      const std::size_t n = i + lead.size();
      if (!wall && line.compare(i, lead.size(), lead) == 0 && n < line.size() &&
          std::isdigit(static_cast<unsigned char>(line[n]))) {
        rx += lead + "[0-9][0-9.]*";
        i = n;
        while (i < line.size() && (std::isdigit(static_cast<unsigned char>(line[i])) || line[i] == '.')) ++i;
        wall = true;
      }
    }
    if (wall) continue;
    rx += std::regex_replace(std::string(1, line[i]), special, R"(\$&)");
    ++i;
  }
  return std::regex(rx);
}

// The text's lines that the output lacks, in one failure with the output (its first 60 lines).
void check_output(Context& ctx, const std::string& where, const std::vector<std::string>& expected,
                  const std::string& actual) {
  const auto lines = split_lines(actual);
  std::string missing;
  for (const auto& e : expected) {
    if (e.empty() || e == "...") continue;
    ++ctx.output_lines;
    const std::regex rx = expected_pattern(e);
    bool found = false;
    for (const auto& a : lines) found = found || std::regex_match(a, rx);
    if (!found) missing += "    " + e + "\n";
  }
  if (missing.empty()) return;
  std::string shown;
  for (std::size_t i = 0; i < lines.size() && i < 60; ++i) shown += "    | " + lines[i] + "\n";
  if (lines.size() > 60) shown += "    | ... (" + std::to_string(lines.size() - 60) + " more lines)\n";
  ctx.fail(where, "the text says the commands print\n" + missing + "  but they printed:\n" + shown);
}

struct Directives {
  std::optional<std::string> skip;
  std::optional<std::string> needs;
  int exit_code = 0;
  bool text = false;
};

struct NumberCheck {
  std::string where;
  std::string number;  // as the text shows it
  std::string source;
};

// The numbers of one file, checked once its commands have run.
void check_number(Context& ctx, const NumberCheck& n) {
  ++ctx.numbers;
  std::istringstream in(n.source);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  double scale = 1;
  bool mean = false;
  std::optional<double> value;
  std::string error;
  try {
    if (!words.empty() && words[0] != "count" && words.back().size() > 1 && words.back()[0] == 'x' &&
        words.back().find('=') == std::string::npos) {
      std::size_t used = 0;
      const std::string factor = words.back().substr(1);
      try {
        scale = std::stod(factor, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != factor.size())
        throw std::runtime_error("bad scale '" + words.back() + "' (expected xNUMBER)");
      words.pop_back();
    }
    mean = words.size() == 4 && words[0] == "json" && words.back() == "mean";
    if (mean) words.pop_back();
    if (words.size() == 3 && words[0] == "json") {
      const auto j = nlohmann::json::parse(slurp(ctx.work / words[1]));
      const auto& v = j.at(nlohmann::json::json_pointer(words[2]));
      if (v.is_string() && !mean) {  // a hash or a name: the text must show it exactly
        if (v.get<std::string>() == n.number) {
          std::cout << "  ok " << n.where << ": " << n.number << " = " << n.source << "\n";
        } else {
          ctx.fail(n.where, "the text says " + n.number + " but " + n.source + " is " + v.get<std::string>());
        }
        return;
      }
      if (mean) {
        if (!v.is_array() || v.empty()) throw std::runtime_error(words[2] + " is not an array of numbers: " + v.dump());
        double sum = 0;
        for (const auto& x : v) {
          if (!x.is_number()) throw std::runtime_error(words[2] + " holds a value that is not a number: " + x.dump());
          sum += x.get<double>();
        }
        value = sum / static_cast<double>(v.size());
      } else {
        if (!v.is_number()) throw std::runtime_error(words[2] + " is not a number: " + v.dump());
        value = v.get<double>();
      }
    } else if (words.size() >= 3 && words[0] == "csv") {
      const auto rows = split_lines(slurp(ctx.work / words[1]));
      if (rows.empty()) throw std::runtime_error(words[1] + " is empty or missing");
      auto cells = [](const std::string& row) {
        std::vector<std::string> c;
        std::string cell;
        std::istringstream s(row);
        while (std::getline(s, cell, ',')) c.push_back(cell);
        if (!row.empty() && row.back() == ',') c.emplace_back();
        return c;
      };
      const auto header = cells(rows[0]);
      auto column = [&](const std::string& name) -> std::size_t {
        for (std::size_t i = 0; i < header.size(); ++i)
          if (header[i] == name) return i;
        throw std::runtime_error(words[1] + " has no column '" + name + "'");
      };
      const std::size_t col = column(words[2]);
      std::vector<std::pair<std::size_t, std::string>> keys;  // every KEY=VALUE must hold
      for (std::size_t w = 3; w < words.size(); ++w) {
        const auto eq = words[w].find('=');
        if (eq == std::string::npos) throw std::runtime_error("expected KEY=VALUE, got '" + words[w] + "'");
        keys.emplace_back(column(words[w].substr(0, eq)), words[w].substr(eq + 1));
      }
      std::optional<std::vector<std::string>> row;
      for (std::size_t r = 1; r < rows.size() && !(row && !keys.empty()); ++r) {
        auto c = cells(rows[r]);
        bool all = true;
        for (const auto& [k, v] : keys) all = all && k < c.size() && c[k] == v;
        if (all) row = c;  // the first match, or with no keys the last row
      }
      if (!row) throw std::runtime_error(words[1] + " has no row where the keys hold");
      if (col >= row->size() || (*row)[col].empty())
        throw std::runtime_error(words[1] + ": no value in column '" + words[2] + "'");
      const std::string& cell = (*row)[col];
      if (std::regex_match(n.number, std::regex("[0-9a-f]{32}"))) {  // a hash: shown exactly
        if (cell == n.number) {
          std::cout << "  ok " << n.where << ": " << n.number << " = " << n.source << "\n";
        } else {
          ctx.fail(n.where, "the text says " + n.number + " but " + n.source + " is " + cell);
        }
        return;
      }
      value = std::stod(cell);
    } else if (words.size() >= 3 && words[0] == "count") {
      // The lines of FILE (in DIR, which links the checkout's folders) that match REGEX: a count
      // the text states about the docs themselves ("6 lessons").
      std::string pattern;
      const auto start = n.source.find(words[1]) + words[1].size();
      pattern = n.source.substr(n.source.find_first_not_of(' ', start));
      while (!pattern.empty() && pattern.back() == ' ') pattern.pop_back();
      const std::regex re(pattern);
      const auto lines = split_lines(slurp(ctx.work / words[1]));
      if (lines.empty()) throw std::runtime_error(words[1] + " is empty or missing");
      std::size_t count = 0;
      for (const auto& line : lines) count += std::regex_search(line, re) ? 1 : 0;
      value = static_cast<double>(count);
    } else {
      throw std::runtime_error(
          "expected 'json FILE POINTER [mean] [xS]', 'csv FILE COLUMN [KEY=VALUE]... [xS]' or 'count FILE "
          "REGEX'");
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!value) {
    ctx.fail(n.where, "cannot read the value of " + n.number + " (<!--= " + n.source + " -->): " + error);
    return;
  }
  std::string digits;
  for (char c : n.number)
    if (c != ',') digits += c;
  const auto dot = digits.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
  const double actual = *value * scale;
  const double quantum = std::pow(10.0, -decimals);
  const double rounded = std::round(actual / quantum) * quantum;
  if (std::abs(rounded - std::stod(digits)) > quantum * 1e-6) {
    std::ostringstream msg;
    msg.precision(10);
    msg << "the text says " << n.number << " but " << n.source << " is " << actual << " (" << rounded
        << " at the text's " << decimals << " decimals)";
    ctx.fail(n.where, msg.str());
  } else {
    std::cout << "  ok " << n.where << ": " << n.number << " = " << n.source << "\n";
  }
}

void run_file(Context& ctx, const fs::path& root, const fs::path& file) {
  std::ifstream f(file);
  if (!f) {
    ctx.fail(file.string(), "cannot read it");
    return;
  }
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  const std::string name =
      file.lexically_relative(root).empty() || file.lexically_relative(root).string().rfind("..", 0) == 0
          ? file.filename().string()
          : file.lexically_relative(root).string();
  std::cout << "== " << file.string() << "\n";

  static const std::regex directive(R"(^\s*<!--\s*doc-test:\s*(skip|exit|needs|text)\b\s*(.*?)\s*-->\s*$)");
  static const std::regex number_mark(
      R"(([0-9a-f]{32}|[-+]?[0-9][0-9,]*(?:\.[0-9]+)?)[%*`)]*<!--=\s*(.*?)\s*-->)");
  std::vector<NumberCheck> numbers;
  Directives pending;
  std::optional<std::string> last_sh_output;  // set after an sh block until a heading
  std::string last_sh_where;
  bool last_sh_ran = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const std::string where = name + ":" + std::to_string(i + 1);
    std::smatch m;
    if (std::regex_match(l, m, directive)) {
      const std::string kind = m[1], arg = m[2];
      if (kind == "skip") pending.skip = arg;
      if (kind == "needs") pending.needs = arg;
      if (kind == "exit") pending.exit_code = std::stoi(arg);
      if (kind == "text") pending.text = true;
      continue;
    }
    if (l.rfind("#", 0) == 0) last_sh_output.reset();
    for (auto it = std::sregex_iterator(l.begin(), l.end(), number_mark); it != std::sregex_iterator(); ++it)
      numbers.push_back({where, (*it)[1], (*it)[2]});
    // Links: a user has the repository and the web, nothing else (no ../shared, no design notes).
    static const std::regex link(R"(\]\(([^)\s]+)\))");
    for (auto it = std::sregex_iterator(l.begin(), l.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      if (target.find("://") != std::string::npos || target.rfind("#", 0) == 0 ||
          target.rfind("mailto:", 0) == 0)
        continue;
      const fs::path p = (file.parent_path() / target.substr(0, target.find('#'))).lexically_normal();
      const auto rel = p.lexically_relative(root).string();
      if (rel.empty() || rel.rfind("..", 0) == 0 || !fs::exists(p))
        ctx.fail(where, "the link " + target + " points " +
                            (rel.rfind("..", 0) == 0 ? std::string("outside the repository") : "to nothing"));
    }
    // A repository path in `code` must exist (a moved scenario or script leaves the text wrong).
    static const std::regex repo_path(R"(`((?:scenarios|plots|tools|models|sim|tests)/[^`\s*]*)`)");
    for (auto it = std::sregex_iterator(l.begin(), l.end(), repo_path); it != std::sregex_iterator(); ++it)
      if (!fs::exists(root / std::string((*it)[1])))
        ctx.fail(where, "`" + std::string((*it)[1]) + "` does not exist");
    if (l.rfind("```", 0) != 0) continue;

    // A fenced block: collect it.
    const std::string info = l.substr(3);
    std::vector<std::string> body;
    std::size_t j = i + 1;
    for (; j < lines.size() && lines[j].rfind("```", 0) != 0; ++j) body.push_back(lines[j]);
    const Directives d = pending;
    pending = {};
    i = j;
    const bool sh = info == "sh" || info == "bash";
    const bool dollar = !sh && info.empty() && !body.empty() && body[0].rfind("$ ", 0) == 0;
    if (!sh && !dollar) {
      if (info.empty() && !d.text && last_sh_output) {
        if (last_sh_ran)
          check_output(ctx, last_sh_where + " (output at " + where + ")", body, *last_sh_output);
        last_sh_output.reset();
      }
      continue;
    }
    bool skip = false;
    if (d.skip) {
      std::cout << "  skip " << where << ": " << *d.skip << "\n";
      skip = true;
    } else if (d.needs && !shell_test(ctx, *d.needs)) {
      std::cout << "  skip " << where << ": needs `" << *d.needs << "`, which fails here\n";
      skip = true;
    }
    if (skip) ++ctx.skipped_blocks;
    // Commands (joined continuations) with, in a "$ " block, their expected lines.
    std::vector<std::pair<std::string, std::vector<std::string>>> commands;
    for (std::size_t k = 0; k < body.size(); ++k) {
      std::string line = body[k];
      if (dollar) {
        if (line.rfind("$ ", 0) != 0) {
          if (!commands.empty()) commands.back().second.push_back(line);
          continue;
        }
        line = line.substr(2);
      }
      std::string cmd = line;
      while (!cmd.empty() && cmd.back() == '\\' && k + 1 < body.size()) cmd += "\n" + body[++k];
      if (cmd.find_first_not_of(" \t") == std::string::npos) continue;
      commands.push_back({cmd, {}});
    }
    std::string block_output;
    for (const auto& [cmd, expected] : commands) {
      if (skip) continue;
      ++ctx.commands;
      std::cout << "  $ " << cmd << "\n" << std::flush;
      const Ran r = run_command(ctx, cmd);
      block_output += r.output;
      if (r.code != d.exit_code)
        ctx.fail(where, "`" + cmd + "` exited with " + std::to_string(r.code) + " (the text expects " +
                            std::to_string(d.exit_code) + "); it printed:\n" + r.output);
      if (dollar) check_output(ctx, where, expected, r.output);
    }
    if (sh) {
      last_sh_output = block_output;
      last_sh_where = where;
      last_sh_ran = !skip;
    } else {
      last_sh_output.reset();
    }
  }
  for (const auto& n : numbers) check_number(ctx, n);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path root, bin, work;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--root" || a == "--bin" || a == "--work") && i + 1 < argc) {
      (a == "--root" ? root : a == "--bin" ? bin : work) = argv[++i];
    } else if (!a.empty() && a[0] != '-') {
      files.emplace_back(a);
    } else {
      std::cerr << "usage: stalesim_doc_test --root SOURCE_DIR --bin STALESIM --work DIR FILE.md...\n";
      return 2;
    }
  }
  if (root.empty() || bin.empty() || work.empty() || files.empty()) {
    std::cerr << "usage: stalesim_doc_test --root SOURCE_DIR --bin STALESIM --work DIR FILE.md...\n";
    return 2;
  }
  root = fs::absolute(root).lexically_normal();
  bin = fs::absolute(bin);
  work = fs::absolute(work);
  // A fresh folder; an old one is removed only when this program made it.
  if (fs::exists(work)) {
    if (!fs::exists(work / kMarker)) {
      std::cerr << "stalesim_doc_test: " << work.string()
                << " exists and was not made by stalesim_doc_test (no " << kMarker
                << "); nothing was deleted: choose another --work\n";
      return 2;
    }
    fs::remove_all(work);
  }
  fs::create_directories(work / "build");
  std::ofstream(work / kMarker) << "made by stalesim_doc_test; removed by its next run\n";
  for (const char* d : {"scenarios", "tools", "plots", "models"})
    fs::create_directory_symlink(root / d, work / d);
  fs::create_symlink(bin, work / "build" / "stalesim");

  // OpenMPI refuses root unless told (the README says so beside its mpirun command); CI runs as root.
  if (::geteuid() == 0) {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    std::cout << "(running as root: OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, as the README "
                 "says)\n";
  }
  // The user's cache folder (validate caches this machine's measured rate there), inside DIR.
  ::setenv("XDG_CACHE_HOME", (work / ".cache").c_str(), 1);
  Context ctx;
  ctx.work = work;
  // The state tools/setup leaves: besides build/stalesim, what its check run writes. Its
  // `build/stalesim ...` lines are run first, as setup runs them, so the docs start from there.
  {
    std::ifstream setup(root / "tools" / "setup");
    std::string line;
    while (std::getline(setup, line)) {
      if (!line.starts_with("build/stalesim ")) continue;
      const Ran r = run_command(ctx, line);
      ++ctx.commands;
      if (r.code != 0) ctx.fail("tools/setup", "`" + line + "` exited with " + std::to_string(r.code));
    }
  }
  for (const auto& f : files) run_file(ctx, root, (f.is_absolute() ? f : root / f).lexically_normal());
  std::cout << "doc-test: " << ctx.commands << " commands run, " << ctx.skipped_blocks << " blocks skipped, "
            << ctx.output_lines << " output lines and " << ctx.numbers
            << " numbers checked: " << ctx.failures.size() << " failed\n";
  for (const auto& fl : ctx.failures) std::cout << "  failed: " << fl.where << "\n";
  return ctx.failures.empty() ? 0 : 1;
}
