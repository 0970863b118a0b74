// The durasim VFS pieces (sim/sqlite_vfs.h): a TrackedImage's changes replay exactly on the image
// they started from (truncation and sparse writes included), a run of deltas replayed together
// equals them replayed in turn, reads past the end are short and zeroed,
// and a connection opened on an image writes through it with the ClockScope's time.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "sim/sqlite_vfs.h"

namespace durasim::sim {
namespace {

TEST(SqliteImageTest, NothingWrittenIsNoChange) {
  TrackedImage image(std::string(10, 'a'));
  EXPECT_FALSE(image.take_changes().has_value());
}

TEST(SqliteImageTest, ChangesReplayOnTheStartingImage) {
  const std::string start(100, 'a');
  TrackedImage image(start);
  image.write("XYZ", 3, 10);
  image.write("QQ", 2, 11);   // overlaps the first write: merged into one chunk
  image.write("tail", 4, 120);  // past the end: the gap reads as zeros
  const std::optional<PageDelta> delta = image.take_changes();
  ASSERT_TRUE(delta.has_value());
  EXPECT_EQ(delta->chunks.size(), 2u);
  EXPECT_EQ(delta->payload_bytes(), 7);
  std::string replayed = start;
  delta->apply_to(replayed);
  EXPECT_EQ(replayed, image.bytes());
  EXPECT_EQ(replayed.substr(10, 3), "XQQ");
  EXPECT_EQ(replayed.substr(100, 20), std::string(20, '\0'));
  EXPECT_FALSE(image.take_changes().has_value());  // taking checkpoints
}

TEST(SqliteImageTest, TruncationThenRegrowthReplaysExactly) {
  const std::string start(100, 'a');
  TrackedImage image(start);
  image.write("B", 1, 80);  // written, then cut away, then the file regrows past it
  image.truncate(50);
  image.write("C", 1, 90);
  const std::optional<PageDelta> delta = image.take_changes();
  ASSERT_TRUE(delta.has_value());
  EXPECT_EQ(delta->min_size, 50);
  EXPECT_EQ(delta->size, 91);
  std::string replayed = start;
  delta->apply_to(replayed);
  EXPECT_EQ(replayed, image.bytes());
  EXPECT_EQ(replayed[80], '\0');
  EXPECT_EQ(replayed[60], '\0');
}

TEST(SqliteImageTest, ForgetDropsPendingChanges) {
  TrackedImage image(std::string(10, 'a'));
  image.write("b", 1, 0);
  image.forget_changes();
  EXPECT_FALSE(image.take_changes().has_value());
}

TEST(SqliteImageTest, ShortReadsAreZeroFilled) {
  TrackedImage image(std::string("abc"));
  char buffer[5] = {'x', 'x', 'x', 'x', 'x'};
  EXPECT_FALSE(image.read(buffer, 5, 1));
  EXPECT_EQ(std::string(buffer, 5), std::string("bc\0\0\0", 5));
  EXPECT_TRUE(image.read(buffer, 3, 0));
  EXPECT_FALSE(image.read(buffer, 2, 10));
  EXPECT_EQ(std::string(buffer, 2), std::string(2, '\0'));
}

TEST(SqlitePageDeltaTest, HashCoversPositionsSizesAndBytes) {
  PageDelta a{.min_size = 0, .size = 8, .chunks = {{.offset = 0, .bytes = "abcd"}}};
  PageDelta moved = a;
  moved.chunks[0].offset = 4;
  PageDelta longer = a;
  longer.size = 9;
  PageDelta other = a;
  other.chunks[0].bytes = "abce";
  EXPECT_EQ(a.hash(), PageDelta(a).hash());
  EXPECT_NE(a.hash(), moved.hash());
  EXPECT_NE(a.hash(), longer.hash());
  EXPECT_NE(a.hash(), other.hash());
}

// A run of commits: random writes and truncations on a TrackedImage, a delta taken after each.
struct DeltaRun {
  std::string start;
  std::vector<PageDelta> deltas;
  std::string end;  // the image after the last commit
};

DeltaRun randomDeltaRun() {
  DeltaRun run;
  run.start = *rc::gen::container<std::string>(*rc::gen::inRange<std::size_t>(0, 200), rc::gen::inRange<char>('a', 'z'));
  TrackedImage image(run.start);
  const int commits = *rc::gen::inRange(0, 12);
  for (int c = 0; c < commits; ++c) {
    const int operations = *rc::gen::inRange(1, 6);
    for (int o = 0; o < operations; ++o) {
      const auto at = static_cast<int64_t>(*rc::gen::inRange<std::size_t>(0, 240));
      if (*rc::gen::inRange(0, 5) == 0) {
        image.truncate(std::min(at, image.size()));
      } else {
        const std::string bytes = *rc::gen::container<std::string>(*rc::gen::inRange<std::size_t>(1, 40), rc::gen::inRange<char>('A', 'Z'));
        image.write(bytes.data(), static_cast<int64_t>(bytes.size()), at);
      }
    }
    if (std::optional<PageDelta> delta = image.take_changes()) run.deltas.push_back(std::move(*delta));
  }
  run.end = image.bytes();
  return run;
}

RC_GTEST_PROP(SqlitePageDeltaTest, DeltasAppliedTogetherEqualThemAppliedInTurn, ()) {
  const DeltaRun run = randomDeltaRun();
  std::string in_turn = run.start;
  for (const PageDelta& delta : run.deltas) delta.apply_to(in_turn);
  RC_ASSERT(in_turn == run.end);
  std::string together = run.start;
  PageDelta::apply_in_order(run.deltas, together);
  RC_ASSERT(together == run.end);
}

TEST(SqlitePageDeltaTest, DeltasAppliedTogetherWriteEachByteOnce) {
  const std::string start(100, 'a');
  TrackedImage image(start);
  std::vector<PageDelta> deltas;
  image.write("first", 5, 10);
  deltas.push_back(*image.take_changes());
  image.truncate(12);  // cuts "first" to "fi"
  image.write("second", 6, 40);
  deltas.push_back(*image.take_changes());
  image.write("X", 1, 11);
  deltas.push_back(*image.take_changes());
  std::string together = start;
  PageDelta::apply_in_order(deltas, together);
  EXPECT_EQ(together, image.bytes());
  EXPECT_EQ(together.substr(10, 2), "fX");
  EXPECT_EQ(together.substr(12, 28), std::string(28, '\0'));
  EXPECT_EQ(together.substr(40), "second");
}

TEST(SqliteVfsTest, ConnectionsWriteThroughTheImageAndReadTheScopedClock) {
  TrackedImage image;
  sqlite3* db = open_image(image);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_GT(image.size(), 0);
  EXPECT_TRUE(image.take_changes().has_value());

  int64_t now = 86'400'000;  // 1970-01-02
  const SqlEnvironment env{[] { return uint64_t{0}; }, [&now] { return now; }};
  std::string date;
  auto read_date = [&] {
    sqlite3_exec(
        db, "SELECT date('now')",
        [](void* out, int, char** values, char**) {
          *static_cast<std::string*>(out) = values[0];
          return 0;
        },
        &date, nullptr);
  };
  {
    ClockScope scope(env);
    read_date();
    EXPECT_EQ(date, "1970-01-02");
  }
  read_date();  // outside any scope: the wrapped VFS's (real) clock
  EXPECT_NE(date, "1970-01-02");
  sqlite3_close_v2(db);
}

}  // namespace
}  // namespace durasim::sim
