#pragma once
// Validated reading of the CSV files the analysis commands read back (compare's staleness.csv,
// metrics.csv and gradients.csv; summarize's sweep.csv and metrics.csv): read bounded by the one
// reader (base/file_read.hpp), split per RFC 4180, and every cell checked where it is used, so
// that a forged or corrupt file (NaN, a negative count, a missing column, a repeated header, no
// rows) is bad input naming the file, line and column instead of a figure.
//
// Errors are IoError (exit 2): "DIR/staleness.csv: line 3, column 2 (staleness_gradients): expected
// an integer >= 0, got '-1'". Text from the file is escaped (sim/text.hpp) in every message.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stalesim {

inline constexpr std::uint64_t kMaxCsvInputBytes = 512u << 20;  // one CSV file read back

// RFC 4180 CSV text as rows of cells (quotes removed, "" read as "), each with the line it starts
// on (1-based). Throws IoError naming `path` for a quote left open.
struct CsvRow {
  std::vector<std::string> cells;
  int64_t line = 0;
};
std::vector<CsvRow> split_csv(std::string_view text, const std::string& path);

class CsvInput {
 public:
  // Reads `path` (a regular file of at most kMaxCsvInputBytes) and its header. `required_columns`
  // must all be in the header, and every row must have the header's cell count; a row repeating
  // the header is refused. `min_rows`: at least that many rows after the header. Throws IoError.
  static CsvInput read(const std::string& path, const std::vector<std::string>& required_columns,
                       size_t min_rows = 1);
  // The same from text already read (`text`), for callers that convert it first.
  static CsvInput parse(const std::string& path, std::string_view text,
                        const std::vector<std::string>& required_columns, size_t min_rows = 1);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }
  size_t rows() const { return rows_.size(); }
  int64_t line(size_t row) const { return rows_[row].line; }
  // The index of the column `name` (one of the required columns, or any in the header).
  size_t column(std::string_view name) const;
  bool has_column(std::string_view name) const;
  const std::string& cell(size_t row, size_t column) const { return rows_[row].cells[column]; }
  const std::vector<std::string>& cells(size_t row) const { return rows_[row].cells; }

  // The cell as a finite number in [min, max]; `empty_ok`: nullopt for an empty cell.
  std::optional<double> number(size_t row, size_t column, double min = std::numeric_limits<double>::lowest(),
                               double max = std::numeric_limits<double>::max(), bool empty_ok = false) const;
  // The cell as an integer in [min, max].
  int64_t integer(size_t row, size_t column, int64_t min,
                  int64_t max = std::numeric_limits<int64_t>::max()) const;
  // An IoError at the cell: "PATH: line L, column C (NAME): WHAT".
  [[noreturn]] void fail(size_t row, size_t column, const std::string& what) const;

 private:
  std::string path_;
  std::vector<std::string> header_;
  std::vector<CsvRow> rows_;
};

}  // namespace stalesim
