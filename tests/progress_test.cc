// The terminal progress bar (cli/progress.h): its line gives seeds done of all, seeds per second and
// the time left; a disabled bar (stderr not a terminal) writes nothing at all.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli/progress.h"

namespace durasim::cli {
namespace {

TEST(Progress, LineShowsDoneRateAndTimeLeft) {
  EXPECT_EQ(Progress::line(0, 100, 0), "[........................]  0/100 seeds");
  EXPECT_EQ(Progress::line(50, 100, 10), "[############............]  50/100 seeds  5.0 seeds/s  ETA 10s");
  EXPECT_EQ(Progress::line(100, 1000, 20), "[##......................]  100/1,000 seeds  5.0 seeds/s  ETA 3m00s");
  EXPECT_EQ(Progress::line(1, 10'000, 10), "[........................]  1/10,000 seeds  0.1 seeds/s  ETA 27h46m");
  EXPECT_EQ(Progress::line(7, 7, 1), "[########################]  7/7 seeds  7.0 seeds/s  ETA 0s");
}

TEST(Progress, DisabledWritesNothing) {
  std::ostringstream out;
  Progress progress(out, 3, false);
  for (int i = 0; i < 3; ++i) progress.advance();
  progress.clear();
  EXPECT_TRUE(out.str().empty()) << out.str();
}

TEST(Progress, EnabledDrawsOnOneLineAndClearsIt) {
  std::ostringstream out;
  Progress progress(out, 2, true);
  progress.advance();
  progress.advance();  // the last seed is always drawn
  const std::string drawn = out.str();
  EXPECT_EQ(drawn.find('\n'), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("\r[############............]  1/2 seeds"), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("2/2 seeds"), std::string::npos) << drawn;
  progress.clear();
  const std::string cleared = out.str().substr(drawn.size());
  EXPECT_EQ(cleared.front(), '\r');
  EXPECT_EQ(cleared.back(), '\r');
  EXPECT_EQ(cleared.find_first_not_of(" \r"), std::string::npos) << cleared;
}

}  // namespace
}  // namespace durasim::cli
