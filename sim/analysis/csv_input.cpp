// Validated CSV input (sim/analysis/csv_input.hpp).

#include "sim/analysis/csv_input.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "sim/output/outputs.hpp"
#include "sim/text.hpp"

namespace stalesim {

std::vector<CsvRow> split_csv(std::string_view text, const std::string& path) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string cell;
  bool quoted = false, any = false;
  int64_t line = 1, quote_line = 0;
  row.line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (!any) row.line = line;
    any = true;
    if (c == '"') {
      quoted = true;
      quote_line = line;
    } else if (c == ',') {
      row.cells.push_back(std::move(cell));
      cell.clear();
    } else if (c == '\n') {
      row.cells.push_back(std::move(cell));
      cell.clear();
      rows.push_back(std::move(row));
      row = CsvRow{};
      any = false;
      ++line;
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (quoted)
    throw IoError(fmt::format("{}: line {}: a quote opened here is never closed", escaped(path), quote_line));
  if (any || !cell.empty() || !row.cells.empty()) {
    row.cells.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  return rows;
}

CsvInput CsvInput::read(const std::string& path, const std::vector<std::string>& required_columns,
                        size_t min_rows) {
  std::string error;
  const auto text = read_regular_file(path, kMaxCsvInputBytes, error);
  if (!text) throw IoError(fmt::format("{}: cannot read: {}", escaped(path), error));
  return parse(path, *text, required_columns, min_rows);
}

CsvInput CsvInput::parse(const std::string& path, std::string_view text,
                         const std::vector<std::string>& required_columns, size_t min_rows) {
  CsvInput in;
  in.path_ = path;
  auto rows = split_csv(text, path);
  if (rows.empty()) throw IoError(fmt::format("{}: empty: expected a header line", escaped(path)));
  in.header_ = std::move(rows.front().cells);
  rows.erase(rows.begin());
  for (const auto& name : required_columns)
    if (std::find(in.header_.begin(), in.header_.end(), name) == in.header_.end())
      throw IoError(fmt::format("{}: line 1: the header has no column '{}' (not a file stalesim wrote?)",
                                escaped(path), name));
  std::set<std::string_view> names;
  for (const auto& name : in.header_)
    if (!names.insert(name).second)
      throw IoError(fmt::format("{}: line 1: the column '{}' is named twice", escaped(path), escaped(name)));
  for (const auto& r : rows) {
    if (r.cells == in.header_)
      throw IoError(
          fmt::format("{}: line {} repeats the header: two files joined into one?", escaped(path), r.line));
    if (r.cells.size() != in.header_.size())
      throw IoError(fmt::format("{}: line {}: {} cells, the header has {}", escaped(path), r.line,
                                r.cells.size(), in.header_.size()));
  }
  if (rows.size() < min_rows)
    throw IoError(fmt::format("{}: {} rows after the header, expected at least {}", escaped(path),
                              rows.size(), min_rows));
  in.rows_ = std::move(rows);
  return in;
}

bool CsvInput::has_column(std::string_view name) const {
  return std::find(header_.begin(), header_.end(), name) != header_.end();
}

size_t CsvInput::column(std::string_view name) const {
  const auto it = std::find(header_.begin(), header_.end(), name);
  if (it == header_.end())
    throw IoError(fmt::format("{}: line 1: the header has no column '{}'", escaped(path_), escaped(name)));
  return static_cast<size_t>(it - header_.begin());
}

void CsvInput::fail(size_t row, size_t column, const std::string& what) const {
  throw IoError(fmt::format("{}: line {}, column {} ({}): {}", escaped(path_), rows_[row].line, column + 1,
                            escaped(header_[column]), what));
}

std::optional<double> CsvInput::number(size_t row, size_t column, double min, double max,
                                       bool empty_ok) const {
  const std::string& s = cell(row, column);
  if (s.empty() && empty_ok) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  const auto range = [&] {
    if (min == std::numeric_limits<double>::lowest() && max == std::numeric_limits<double>::max())
      return std::string("a finite number");
    if (max == std::numeric_limits<double>::max()) return fmt::format("a finite number >= {}", min);
    return fmt::format("a number in [{}, {}]", min, max);
  };
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < min || v > max)
    fail(row, column, fmt::format("expected {}, got '{}'", range(), escaped(s)));
  return v;
}

int64_t CsvInput::integer(size_t row, size_t column, int64_t min, int64_t max) const {
  const std::string& s = cell(row, column);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < min || v > max)
    fail(row, column,
         max == std::numeric_limits<int64_t>::max()
             ? fmt::format("expected an integer >= {}, got '{}'", min, escaped(s))
             : fmt::format("expected an integer in [{}, {}], got '{}'", min, max, escaped(s)));
  return v;
}

}  // namespace stalesim
