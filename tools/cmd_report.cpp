// `stalesim report RUN_OR_SWEEP... [--out DIR]`: one self-contained HTML page on runs and sweeps
// (sim/analysis/report_page.hpp). plots/report_figures.py draws the figures with matplotlib (the
// python3 of tools/find-python); this command checks the inputs, runs it into a temporary beside
// the output folder, writes the page and report.json, and installs the folder in one rename
// (sim/output/run_folder.hpp): a report folder is recognised as ours (FolderKind::kReport), so
// --force replaces it and a report inside a sweep folder does not stop the sweep's resume.

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.hpp"
#include "sim/analysis/report_page.hpp"
#include "sim/analysis/summarize.hpp"
#include "sim/build_info.hpp"
#include "sim/output/run_folder.hpp"
#include "tools/cli.hpp"

namespace stalesim::cli {

namespace fs = std::filesystem;

namespace {

// The checkout's plots/ folder: $STALESIM_PLOTS_DIR, else plots/ beside the folder of this program
// (build/stalesim), else the source tree this program was built from.
fs::path plots_dir() {
  if (const std::string e = env("STALESIM_PLOTS_DIR"); !e.empty()) return e;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::is_regular_file(self.parent_path().parent_path() / "plots" / "report_figures.py", ec))
    return self.parent_path().parent_path() / "plots";
  return fs::path(STALESIM_SOURCE_DIR) / "plots";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// tools/find-python's answer: a python3 that imports matplotlib. Throws ScenarioError (exit 2) with
// its message when there is none.
std::string find_python(const fs::path& plots) {
  const fs::path finder = plots.parent_path() / "tools" / "find-python";
  std::FILE* f = ::popen(("/bin/sh " + shell_quote(finder.string())).c_str(), "r");
  if (!f)
    throw ScenarioError(fmt::format("report: cannot run {}: {}", finder.string(), std::strerror(errno)));
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) out += buf;
  const int status = ::pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (status != 0 || out.empty())
    throw ScenarioError(fmt::format(
        "report: the figures need matplotlib and {} found no python3 with it (see its message above; "
        "Debian: apt-get install python3-matplotlib)",
        finder.string()));
  return out;
}

// Runs argv (no shell; argv[0] looked up on PATH when it has no slash), its output on ours;
// returns its exit status (-1: killed or not started; 127: could not be started).
int run_child(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    ::execvp(cargv[0], cargv.data());  // $PYTHON may name a program on PATH
    _exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const fs::path& p, std::uint64_t max_bytes) {
  std::string error;
  const auto text = read_regular_file(p.string(), max_bytes, error);
  if (!text) throw IoError(fmt::format("{}: cannot read: {}", p.string(), error));
  return *text;
}

nlohmann::json read_json(const fs::path& p) {
  std::string error;
  auto j = read_json_file(p.string(), kMaxSummaryBytes, error);
  if (!j) throw IoError(fmt::format("{}: {}", p.string(), error));
  return *j;
}

}  // namespace

int cmd_report(const std::vector<std::string>& args) {
  po::options_description o("Usage: stalesim report RUN_OR_SWEEP... [options]\n\nOptions");
  o.add_options()("inputs", po::value<std::vector<std::string>>()->composing(),
                  "run folders and sweep folders")(
      "out", po::value<std::string>(),
      "the report folder (default: RESULTS/report-NAME, NAME the first input's)")(
      "compare", po::value<std::string>(),
      "KEY=A,B: for each sweep, A against B over seeds (summarize --compare)")(
      "force", "replace an existing report folder")("help,h", "show this help");
  add_results_option(o);
  po::positional_options_description pos;
  pos.add("inputs", -1);
  const auto p = parse(args, o, pos);
  if (p.help) {
    std::cout << o << R"(
Writes DIR/report.html, one page that opens offline (images inlined, no network, no CDN): for the
runs given (drawn together) and for each sweep (all its points, then one section per point over its
seeds): the scenario in words, a table of the runs, the timelines of the runs that have a trace
(run --trace) on one time axis at one width with clocks on the bars and waits coloured by the worker
waited for, the staleness distribution on a log-count axis, staleness over time (linear or log),
test accuracy with min-max bands over seeds and the target, and with --compare the differences over
seeds with their standard errors and verdicts. The figures are also PNGs beside the page;
report.json lists the folder's files. Needs python3 with matplotlib (tools/find-python).
Exit 2 on bad input (a folder that is neither a run nor a sweep, an output folder not ours).
)";
    return kExitOk;
  }
  if (!p.vm.count("inputs")) throw UsageError("report: give run or sweep folders");
  std::vector<std::string> inputs;
  for (const auto& in : p.vm["inputs"].as<std::vector<std::string>>()) {
    const std::string dir = display_path(in);
    const FolderCheck c = inspect_folder(fs::path(dir));
    if (c.kind != FolderKind::kRun && c.kind != FolderKind::kSweep)
      throw IoError(fmt::format(
          "{}: not a run folder or a sweep folder ({}); report reads run folders (summary.json) and sweep "
          "folders (sweep.csv)",
          dir,
          c.kind == FolderKind::kAbsent   ? std::string("no such folder")
          : c.kind == FolderKind::kEmpty  ? std::string("empty")
          : c.kind == FolderKind::kReport ? std::string("it is a report folder")
                                          : "it " + c.why));
    if (c.kind == FolderKind::kSweep && !fs::exists(fs::path(dir) / "sweep.csv"))
      throw IoError(
          fmt::format("{}: a sweep folder without sweep.csv: not finished (run the sweep again)", dir));
    inputs.push_back(dir);
  }
  const std::optional<CompareOption> compare =
      p.vm.count("compare") ? std::optional(parse_compare(p.vm["compare"].as<std::string>())) : std::nullopt;
  const std::string out = display_path(
      p.vm.count("out") ? p.vm["out"].as<std::string>()
                        : default_output(p.vm, "report-" + fs::path(inputs.front()).filename().string()));
  const fs::path target = resolve_output_path(out);
  const fs::path parent = target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw IoError(fmt::format("{}: cannot create folder: {}", parent.string(), ec.message()));
  clean_stale_temporaries(parent, target.filename().string());
  const FolderCheck existing = inspect_folder(target);
  if (existing.kind == FolderKind::kReport) {
    if (!p.vm.count("force"))
      throw IoError(fmt::format("{}: a report folder exists there (use --force to replace it)", out));
    refuse_protected(out, target, {}, env("HOME"));
  } else if (existing.kind != FolderKind::kAbsent && existing.kind != FolderKind::kEmpty) {
    throw IoError(fmt::format(
        "{}: exists and is not a report folder ({}); report writes only a new, empty or "
        "report folder: choose another --out",
        out,
        existing.kind == FolderKind::kOther ? "it " + existing.why : std::string("a run or sweep folder")));
  }
  const fs::path plots = plots_dir();
  const std::string python = find_python(plots);

  size_t figures = 0;
  const fs::path temporary = create_temporary(parent, "partial", target.filename().string());
  const fs::path tmp = temporary / "run";
  try {
    fs::create_directory(tmp);
    std::vector<std::string> argv{python, (plots / "report_figures.py").string(), tmp.string()};
    argv.insert(argv.end(), inputs.begin(), inputs.end());
    const int rc = run_child(argv);
    if (rc != 0)
      throw IoError(fmt::format("report: {} failed (exit {}); see its message above; nothing was written",
                                (plots / "report_figures.py").string(), rc));
    const nlohmann::json figs = read_json(tmp / "figures.json");
    std::vector<ReportSection> sections;
    std::vector<std::string> files{"report.html", "figures.json"};
    size_t sweep_index = 0;
    std::vector<std::string> sweeps;
    for (const auto& in : inputs)
      if (inspect_folder(fs::path(in)).kind == FolderKind::kSweep) sweeps.push_back(in);
    for (const auto& js : figs.at("sections")) {
      ReportSection s;
      s.id = js.at("id").get<std::string>();
      s.title = js.at("title").get<std::string>();
      for (const auto& r : js.at("runs")) {
        const std::string folder = r.at("folder").get<std::string>();
        s.runs.push_back(
            {folder, r.at("label").get<std::string>(), read_json(fs::path(folder) / "summary.json")});
      }
      for (const auto& f : js.at("figures")) {
        ReportFigure fig{f.at("file").get<std::string>(), f.at("kind").get<std::string>(),
                         f.at("caption").get<std::string>(), ""};
        if (fig.file.find('/') != std::string::npos || fig.file.empty() || fig.file[0] == '.')
          throw IoError(fmt::format("{}: a figure name that is not a plain file name: {}",
                                    (tmp / "figures.json").string(), fig.file));
        fig.png = read_file(tmp / fig.file, 64u << 20);
        files.push_back(fig.file);
        ++figures;
        s.figures.push_back(std::move(fig));
      }
      // A sweep's overview section ("sweepK") gets the comparison over seeds.
      if (compare && s.id.rfind("sweep", 0) == 0 && s.id.find("-point") == std::string::npos) {
        if (sweep_index < sweeps.size()) {
          try {
            s.comparison = compare_sweep(sweeps[sweep_index], compare->key, compare->a, compare->b).table;
          } catch (const IoError& e) {  // this sweep lacks the column or a value: said, not fatal
            s.comparison = fmt::format("not compared: {}", e.what());
          }
        }
        ++sweep_index;
      }
      sections.push_back(std::move(s));
    }
    std::string title = "stalesim report: ";
    for (size_t i = 0; i < inputs.size(); ++i)
      title += (i ? ", " : "") + fs::path(inputs[i]).filename().string();
    write_text_file(tmp / "report.html", report_html(title, inputs, sections));
    const nlohmann::json manifest{
        {"stalesim_report", build_info_json().value("stalesim_version", std::string("?"))},
        {"inputs", inputs},
        {"files", files}};
    write_text_file(tmp / std::string(kReportManifest), manifest.dump(2) + "\n");
    install_folder(temporary, target);
  } catch (...) {
    discard_temporary(temporary);
    throw;
  }
  fmt::print("{}: {} inputs; wrote {}/report.html ({} figures inlined, also beside it)\n", out, inputs.size(),
             out, figures);
  return kExitOk;
}

}  // namespace stalesim::cli
