// Forked workers (cli/workers.h): results arrive in task order whatever the number of jobs and the
// order tasks finish in; a `deliver` that says stop ends the campaign; a worker that dies is named
// with the task it was running, after every task before it was delivered.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cli/workers.h"

namespace durasim::cli {
namespace {

// Task k's result; later tasks finish sooner, so workers finish out of order.
std::string slow_start(uint64_t k) {
  std::this_thread::sleep_for(std::chrono::milliseconds(k < 4 ? 20 : 0));
  std::string line = "result ";
  line += std::to_string(k * k);
  return line;
}

std::vector<std::string> delivered(uint64_t count, unsigned jobs) {
  std::vector<std::string> lines;
  const auto lost = run_tasks(count, jobs, slow_start, [&](uint64_t k, const std::string& line) {
    EXPECT_EQ(k, lines.size());
    lines.push_back(line);
    return true;
  });
  EXPECT_FALSE(lost.has_value());
  return lines;
}

TEST(Workers, ResultsArriveInTaskOrderWhateverTheJobs) {
  const std::vector<std::string> one = delivered(200, 1);
  ASSERT_EQ(one.size(), 200u);
  EXPECT_EQ(one[7], "result 49");
  EXPECT_EQ(delivered(200, 2), one);
  EXPECT_EQ(delivered(200, 5), one);
  EXPECT_EQ(delivered(3, 8), std::vector<std::string>(one.begin(), one.begin() + 3));  // more jobs than tasks
  EXPECT_TRUE(delivered(0, 4).empty());
}

TEST(Workers, DeliverCanStopTheCampaign) {
  uint64_t calls = 0;
  const auto lost = run_tasks(1000, 3, slow_start, [&](uint64_t k, const std::string&) {
    ++calls;
    return k < 9;
  });
  EXPECT_FALSE(lost.has_value());
  EXPECT_EQ(calls, 10u);
}

TEST(Workers, AWorkerThatDiesIsNamedWithItsTask) {
  std::vector<uint64_t> got;
  const auto lost = run_tasks(
      50, 2,
      [](uint64_t k) {
        if (k == 17) kill(getpid(), SIGKILL);
        return std::string("ok");
      },
      [&](uint64_t k, const std::string&) {
        got.push_back(k);
        return true;
      });
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->task, 17u);
  EXPECT_NE(lost->why.find("killed by signal 9"), std::string::npos) << lost->why;
  ASSERT_EQ(got.size(), 17u);
  EXPECT_EQ(got.back(), 16u);
}

TEST(Workers, JobsOutOfRangeAreRefused) {
  const auto nothing = [](uint64_t, const std::string&) { return true; };
  EXPECT_THROW(run_tasks(1, 0, slow_start, nothing), std::invalid_argument);
  EXPECT_THROW(run_tasks(1, kMaxJobs + 1, slow_start, nothing), std::invalid_argument);
}

}  // namespace
}  // namespace durasim::cli
