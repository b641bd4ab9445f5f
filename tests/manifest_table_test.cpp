// A manifest of named columns: a header line is told from a plain manifest's first line by
// its last cell, rows are split at tabs with empty cells kept, and whatever cannot be a
// table is refused naming the file, the line and what to write.
#include "dataset/manifest_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace forkfeed {
namespace {

using Cells = std::vector<std::string>;

TEST(ManifestTable, AHeaderLineEndsInANameAPlainLineInALabel) {
  EXPECT_TRUE(has_header_line("image\tcls\ttxt\na.jpg\t3\thi\n"));
  EXPECT_TRUE(has_header_line("\xEF\xBB\xBF# made by hand\n\nimage\tcaption\r\na.jpg\thi\n"));
  EXPECT_TRUE(has_header_line("image\n"));  // one column: the images alone
  EXPECT_FALSE(has_header_line("a.jpg\t3\nb.jpg\t4\n"));
  EXPECT_FALSE(has_header_line("# path<TAB>label\na.jpg\t 3 \n"));
  EXPECT_FALSE(has_header_line(""));
  EXPECT_FALSE(has_header_line("# only a comment\n\n"));
}

TEST(ManifestTable, ReadsTheColumnsAndEveryRowCellByCell) {
  const std::string text =
      "\xEF\xBB\xBF# a comment\nImage\tcls\tSeg.png\ttxt\r\n"
      "a/x.jpg\t3\ta/x_m.png\ta dog, on a beach\n"
      "\n"
      "b/y.jpg\t\t\tcaf\xC3\xA9\n"
      "# between rows\n"
      "c/z.jpg\t1\tc/z_m.png\t \n";
  const Result<ManifestTable> table = read_manifest_table(text, "list.tsv");
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->columns, (Cells{"image", "cls", "seg.png", "txt"}));
  ASSERT_EQ(table->rows.size(), 3u);
  EXPECT_EQ(table->rows[0].line, 3u);
  EXPECT_EQ(table->rows[0].cells, (Cells{"a/x.jpg", "3", "a/x_m.png", "a dog, on a beach"}));
  EXPECT_EQ(table->rows[1].line, 5u);
  EXPECT_EQ(table->rows[1].cells, (Cells{"b/y.jpg", "", "", "caf\xC3\xA9"}));
  EXPECT_EQ(table->rows[2].line, 7u);
  EXPECT_EQ(table->rows[2].cells, (Cells{"c/z.jpg", "1", "c/z_m.png", " "}));
}

TEST(ManifestTable, RefusesWhatIsNoTableNamingTheLine) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"image\tcls\timage\na.jpg\t1\tb.jpg\n", "list.tsv:1: the header line names the column image twice"},
      {"image\tCLS\tcls\na.jpg\t1\t2\n", "names the column cls twice"},
      {"image\tmy caption\na.jpg\thi\n",
       "list.tsv:1: a header line naming the columns, since its last cell 'my "
       "caption' is no label; but 'my caption' is no column name"},
      {"a/x.jpg\tthree\n",
       "since its last cell 'three' is no label; but 'a/x.jpg' is no column name (letters, "
       "digits, '_', '-' and inner '.', as a member's extension is spelled). A manifest "
       "without a header line has 'path<TAB>label' lines"},
      {"image\t.png\na.jpg\tb.png\n", "'.png' is no column name"},
      {"image\tseg..png\na.jpg\tb.png\n", "'seg..png' is no column name"},
      {"image\ttxt\t\na.jpg\thi\t\n", "'' is no column name"},
      {"image\tcls\ttxt\na/x.jpg\t3\n",
       "list.tsv:2: 2 cells, but the header line names 3 columns: 'a/x.jpg\\t3' (cells are separated by one "
       "tab; "
       "an empty cell is two tabs in a row)"},
      {"image\tcls\na/x.jpg\t3\t\n", "list.tsv:2: 3 cells, but the header line names 2 columns"},
      {"image\tcls\n# no rows\n", "list.tsv: no samples under its header line"},
      {"image\tcls\n" + std::string(70000, 'x') + "\t1\n", "list.tsv:2: line is over 65536 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 60));
    const Result<ManifestTable> table = read_manifest_table(c.text, "list.tsv");
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().code(), Status::Code::kBadData);
    EXPECT_NE(table.status().message().find(c.message), std::string::npos) << table.status().message();
  }
}

}  // namespace
}  // namespace forkfeed
