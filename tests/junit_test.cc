// The JUnit report (cli/junit.h): a suite per workload, a case per batch of 25 seeds cut by seed
// value and clipped to the range, shards named in the case, failures carrying the replay and
// reproduce commands, and every text escaped for XML (markup, control characters, bytes that are
// not UTF-8).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "cli/junit.h"

namespace durasim::cli {
namespace {

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

SeedResult result(const std::string& workload, uint64_t seed, bool passed) {
  SeedResult r;
  r.workload = workload;
  r.seed = seed;
  r.passed = passed;
  if (!passed) {
    r.failure = "OBX-14 violated 1x: <Account/a&b> \"quoted\"";
    r.reproduce = "durasim run --workload outbox --seed ";  // built step by step: GCC 12 warns (-Wrestrict) on "lit" + to_string(...)
    r.reproduce += std::to_string(seed);
    r.trace = "durasim-failures/outbox-seed-";
    r.trace += std::to_string(seed);
    r.trace += ".trace";
  }
  return r;
}

TEST(JUnit, EscapesMarkupControlCharactersAndBrokenUtf8) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(xml_escape("tab\tline\nbell\x07"), "tab\tline\nbell\\x07");
  EXPECT_EQ(xml_escape("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(xml_escape("bad \xFF end \xC3"), "bad \xEF\xBF\xBD end \xEF\xBF\xBD");
}

TEST(JUnit, OneCasePerWorkloadAndBatchOfSeeds) {
  JUnitReport report(make_slice(10, 60, Shard{}), "recoverable");
  for (uint64_t seed = 10; seed <= 60; ++seed) report.add(result("alarms", seed, true));
  for (uint64_t seed = 10; seed <= 60; ++seed) report.add(result("outbox", seed, seed != 30 && seed != 31));
  std::ostringstream out;
  report.write(out);
  const std::string xml = out.str();
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"durasim run\" tests=\"6\" failures=\"1\"", 0), 0u) << xml;
  EXPECT_EQ(count(xml, "<testsuite "), 2u);
  EXPECT_EQ(count(xml, "<testcase "), 6u);
  for (const char* name : {"name=\"seeds 10..24\"", "name=\"seeds 25..49\"", "name=\"seeds 50..60\""}) EXPECT_EQ(count(xml, name), 2u) << name;
  EXPECT_EQ(count(xml, "<failure "), 1u);
  EXPECT_NE(xml.find("message=\"2 of 25 seeds failed; first: seed 30: OBX-14 violated 1x: &lt;Account/a&amp;b&gt; &quot;quoted&quot;\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("replay: durasim replay durasim-failures/outbox-seed-31.trace\n"), std::string::npos) << xml;
  EXPECT_NE(xml.find("reproduce: durasim run --workload outbox --seed 30\n"), std::string::npos) << xml;
  EXPECT_EQ(count(xml, "<"), count(xml, ">"));
}

TEST(JUnit, ShardedCasesNameTheirShard) {
  JUnitReport report(make_slice(0, 99, Shard{1, 4}), "arbitrary");
  for (uint64_t seed = 25; seed <= 49; ++seed) report.add(result("log", seed, true));
  std::ostringstream out;
  report.write(out);
  EXPECT_NE(out.str().find("name=\"seeds 25..49 (shard 1/4)\""), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("<property name=\"faults\" value=\"arbitrary\"/>"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace durasim::cli
