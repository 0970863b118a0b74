// The World's random source (sim/random.h): independent named streams, seed determinism, the
// ranges of below / between / chance (with RapidCheck properties), the exponential mean, draws that
// are skipped (bound 1, certain chances), replay mode with its divergence reports, and forgiving mode
// (the shrinker's): a complete log gives the recorded values, a stream that ran out or a choice that
// does not fit gives the simplest value of the draw, and what was drawn replays exactly; another(),
// the choice that opens an actor's operation, in each mode.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "sim/random.h"

namespace durasim::sim {
namespace {

std::vector<uint64_t> draws(RandomSource& r, StreamId s, int n, uint64_t bound = 0) {
  std::vector<uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(r.below(s, bound));
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(RandomSource, SameSeedSameValuesDifferentSeedDifferentValues) {
  auto a = RandomSource::recording(17), b = RandomSource::recording(17), c = RandomSource::recording(18);
  const auto sa = a.stream("s"), sb = b.stream("s"), sc = c.stream("s");
  const auto va = draws(a, sa, 32, 1000), vb = draws(b, sb, 32, 1000), vc = draws(c, sc, 32, 1000);
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  EXPECT_EQ(a.log(), b.log());
}

TEST(RandomSource, StreamsAreIndependent) {
  auto quiet = RandomSource::recording(5), busy = RandomSource::recording(5), reversed = RandomSource::recording(5);
  const auto quiet_b = quiet.stream("b");
  const auto busy_a = busy.stream("a"), busy_b = busy.stream("b");
  const auto rev_b = reversed.stream("b"), rev_a = reversed.stream("a");

  std::vector<uint64_t> from_quiet, from_busy, from_reversed;
  for (int i = 0; i < 50; ++i) {
    from_quiet.push_back(quiet.bits(quiet_b));
    for (int k = 0; k < i % 4; ++k) busy.below(busy_a, 7);  // extra draws in stream a
    from_busy.push_back(busy.bits(busy_b));
    reversed.between(rev_a, -3, 3);
    from_reversed.push_back(reversed.bits(rev_b));
  }
  EXPECT_EQ(from_quiet, from_busy) << "draws in stream a shifted stream b";
  EXPECT_EQ(from_quiet, from_reversed) << "stream b depends on the order streams were named in";

  auto other = RandomSource::recording(5);
  const auto other_c = other.stream("c");
  EXPECT_NE(draws(other, other_c, 8), std::vector<uint64_t>(from_quiet.begin(), from_quiet.begin() + 8))
      << "two stream names gave the same sequence";
}

TEST(RandomSource, StreamHandleIsStableAndLogged) {
  auto r = RandomSource::recording(1);
  const auto x = r.stream("x"), y = r.stream("y"), x_again = r.stream("x");
  EXPECT_EQ(x.index, x_again.index);
  EXPECT_NE(x.index, y.index);
  EXPECT_EQ(r.log().streams, (std::vector<std::string>{"x", "y"}));
  r.below(y, 10);
  r.below(x, 20);
  ASSERT_EQ(r.log().choices.size(), 2u);
  EXPECT_EQ(r.log().choices[0].stream, y.index);
  EXPECT_EQ(r.log().choices[0].bound, 10u);
  EXPECT_EQ(r.log().choices[1].stream, x.index);
  EXPECT_EQ(r.log().choices[1].bound, 20u);
  EXPECT_EQ(r.draws(), 2u);
}

TEST(RandomSource, BoundOneAndDegenerateRangesDrawNothing) {
  auto r = RandomSource::recording(3);
  const auto s = r.stream("s");
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(r.below(s, 1), 0u);
    EXPECT_EQ(r.between(s, 42, 42), 42);
    EXPECT_EQ(r.between(s, -7, -7), -7);
  }
  EXPECT_EQ(r.draws(), 0u);
  EXPECT_TRUE(r.log().choices.empty());
}

TEST(RandomSource, CertainChancesDrawNothing) {
  auto r = RandomSource::recording(4);
  const auto s = r.stream("s");
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(r.chance(s, 0));
    EXPECT_TRUE(r.chance(s, kPpmScale));
    EXPECT_TRUE(r.chance(s, kPpmScale + 1));
  }
  EXPECT_EQ(r.draws(), 0u);
  EXPECT_TRUE(r.log().choices.empty());

  int hits = 0;
  for (int i = 0; i < 20'000; ++i) hits += r.chance(s, 250'000) ? 1 : 0;
  EXPECT_EQ(r.draws(), 20'000u);
  EXPECT_NEAR(hits, 5'000, 400) << "chance(25%) far from 25%";
}

TEST(RandomSource, BetweenCoversInclusiveBounds) {
  auto r = RandomSource::recording(8);
  const auto s = r.stream("s");
  std::set<int64_t> seen;
  for (int i = 0; i < 2'000; ++i) {
    const int64_t v = r.between(s, -3, 2);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 2);
    seen.insert(v);
  }
  EXPECT_EQ(seen, (std::set<int64_t>{-3, -2, -1, 0, 1, 2})) << "both ends of [lo, hi] must be reachable";
  EXPECT_EQ(r.log().choices.back().bound, 6u);

  std::set<int64_t> negative;
  for (int i = 0; i < 500; ++i) negative.insert(r.between(s, -10, -9));
  EXPECT_EQ(negative, (std::set<int64_t>{-10, -9}));
}

TEST(RandomSource, BetweenFullInt64Range) {
  auto r = RandomSource::recording(9);
  const auto s = r.stream("s");
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  bool negative = false, positive = false;
  std::set<int64_t> values;
  for (int i = 0; i < 200; ++i) {
    const int64_t v = r.between(s, lo, hi);
    negative |= v < 0;
    positive |= v > 0;
    values.insert(v);
    EXPECT_EQ(r.log().choices.back().bound, 0u) << "the full range is recorded as bound 0";
  }
  EXPECT_TRUE(negative && positive);
  EXPECT_GT(values.size(), 190u);

  // Ranges reaching the extremes.
  for (int i = 0; i < 200; ++i) {
    EXPECT_GE(r.between(s, hi - 1, hi), hi - 1);
    EXPECT_LE(r.between(s, lo, lo + 1), lo + 1);
    const int64_t wide = r.between(s, lo, 0);
    EXPECT_LE(wide, 0);
  }
}

TEST(RandomSource, ExponentialMeanIsRoughlyRight) {
  auto r = RandomSource::recording(12);
  const auto s = r.stream("latency");
  for (const int64_t mean : {1'000, 50'000}) {
    constexpr int kDraws = 100'000;
    double sum = 0;
    int64_t smallest = INT64_MAX, largest = 0;
    for (int i = 0; i < kDraws; ++i) {
      const int64_t v = r.exponential(s, mean);
      ASSERT_GE(v, 0);
      sum += static_cast<double>(v);
      smallest = std::min(smallest, v);
      largest = std::max(largest, v);
    }
    const double observed = sum / kDraws;
    EXPECT_NEAR(observed, static_cast<double>(mean), 0.05 * static_cast<double>(mean)) << "mean " << mean;
    EXPECT_LT(smallest, mean / 100) << "no short draws";
    EXPECT_GT(largest, 5 * mean) << "no tail";
  }
  EXPECT_EQ(r.exponential(s, 0), 0);
}

TEST(RandomSource, ReplayReturnsRecordedValues) {
  auto rec = RandomSource::recording(77);
  const auto a = rec.stream("alpha"), b = rec.stream("beta");
  std::vector<int64_t> recorded;
  for (int i = 0; i < 20; ++i) {
    recorded.push_back(static_cast<int64_t>(rec.below(a, 10)));
    recorded.push_back(rec.between(b, -100, 100));
    recorded.push_back(rec.chance(a, 500'000) ? 1 : 0);
    recorded.push_back(rec.exponential(b, 1000));
    recorded.push_back(static_cast<int64_t>(rec.bits(a)));
    rec.below(b, 1);  // draws nothing, in either mode
  }

  auto rep = RandomSource::replaying(rec.log());
  EXPECT_TRUE(rep.replaying());
  EXPECT_FALSE(rec.replaying());
  // Streams may be named in another order in the re-run: they are matched by name.
  const auto rb = rep.stream("beta"), ra = rep.stream("alpha");
  std::vector<int64_t> replayed;
  for (int i = 0; i < 20; ++i) {
    replayed.push_back(static_cast<int64_t>(rep.below(ra, 10)));
    replayed.push_back(rep.between(rb, -100, 100));
    replayed.push_back(rep.chance(ra, 500'000) ? 1 : 0);
    replayed.push_back(rep.exponential(rb, 1000));
    replayed.push_back(static_cast<int64_t>(rep.bits(ra)));
    rep.below(rb, 1);
  }
  EXPECT_EQ(replayed, recorded);
  EXPECT_FALSE(rep.divergence().has_value()) << *rep.divergence();
  EXPECT_EQ(rep.draws(), rec.draws());
}

// A recorded log: alpha(bound 10), beta(bound 20), alpha(bound 10).
ChoiceLog small_log(std::vector<uint64_t>* values) {
  auto rec = RandomSource::recording(2024);
  const auto a = rec.stream("alpha"), b = rec.stream("beta");
  values->push_back(rec.below(a, 10));
  values->push_back(rec.below(b, 20));
  values->push_back(rec.below(a, 10));
  return rec.log();
}

TEST(RandomSource, ReplayDivergesOnWrongStream) {
  std::vector<uint64_t> values;
  auto rep = RandomSource::replaying(small_log(&values));
  const auto a = rep.stream("alpha"), b = rep.stream("beta");
  EXPECT_EQ(rep.below(a, 10), values[0]);
  EXPECT_FALSE(rep.divergence());
  rep.below(a, 20);  // the log holds beta next
  ASSERT_TRUE(rep.divergence());
  const std::string message = *rep.divergence();
  EXPECT_TRUE(contains(message, "choice #1")) << message;
  EXPECT_TRUE(contains(message, "'alpha'")) << message;
  EXPECT_TRUE(contains(message, "'beta'")) << message;
  // Once diverged, the divergence is kept and later draws give 0.
  EXPECT_EQ(rep.below(b, 20), 0u);
  EXPECT_EQ(*rep.divergence(), message);
}

TEST(RandomSource, ReplayDivergesOnWrongBound) {
  std::vector<uint64_t> values;
  auto rep = RandomSource::replaying(small_log(&values));
  const auto a = rep.stream("alpha");
  rep.below(a, 11);
  ASSERT_TRUE(rep.divergence());
  EXPECT_TRUE(contains(*rep.divergence(), "choice #0")) << *rep.divergence();
  EXPECT_TRUE(contains(*rep.divergence(), "bound 11")) << *rep.divergence();
  EXPECT_TRUE(contains(*rep.divergence(), "bound 10")) << *rep.divergence();
}

TEST(RandomSource, ReplayDivergesOnUnrecordedStream) {
  std::vector<uint64_t> values;
  auto rep = RandomSource::replaying(small_log(&values));
  const auto g = rep.stream("gamma");
  EXPECT_EQ(rep.below(g, 10), 0u);
  ASSERT_TRUE(rep.divergence());
  EXPECT_TRUE(contains(*rep.divergence(), "unrecorded stream")) << *rep.divergence();
}

TEST(RandomSource, ReplayDivergesWhenTheLogIsExhausted) {
  std::vector<uint64_t> values;
  auto rep = RandomSource::replaying(small_log(&values));
  const auto a = rep.stream("alpha"), b = rep.stream("beta");
  EXPECT_EQ(rep.below(a, 10), values[0]);
  EXPECT_EQ(rep.below(b, 20), values[1]);
  EXPECT_EQ(rep.below(a, 10), values[2]);
  EXPECT_EQ(rep.below(a, 1), 0u) << "a bound of 1 draws nothing, even past the end of the log";
  EXPECT_FALSE(rep.divergence());
  EXPECT_EQ(rep.below(a, 10), 0u);
  ASSERT_TRUE(rep.divergence());
  EXPECT_TRUE(contains(*rep.divergence(), "choice #3")) << *rep.divergence();
  EXPECT_TRUE(contains(*rep.divergence(), "more choices than were recorded")) << *rep.divergence();
}

TEST(RandomSource, ReplayRejectsAValueOutsideItsBound) {
  std::vector<uint64_t> values;
  ChoiceLog log = small_log(&values);
  log.choices[0].value = 10;  // bound 10: out of range
  auto rep = RandomSource::replaying(log);
  const auto a = rep.stream("alpha");
  EXPECT_EQ(rep.below(a, 10), 0u);
  EXPECT_TRUE(rep.divergence().has_value());
}

// Properties over bounds.

rc::Gen<uint64_t> interesting_bound() {
  return rc::gen::oneOf(rc::gen::arbitrary<uint64_t>(), rc::gen::inRange<uint64_t>(0, 20),
                        rc::gen::element<uint64_t>(0, 1, 2, 3, (uint64_t{1} << 63) - 1, uint64_t{1} << 63,
                                                   (uint64_t{1} << 63) + 1, UINT64_MAX - 1, UINT64_MAX));
}

RC_GTEST_PROP(RandomProp, BelowStaysInBound, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const auto bound = *interesting_bound();
  auto r = RandomSource::recording(seed);
  const auto s = r.stream("p");
  for (int i = 0; i < 64; ++i) {
    const uint64_t v = r.below(s, bound);
    if (bound != 0) RC_ASSERT(v < bound);
  }
  // Every draw except bound 1 is recorded with its bound and value.
  RC_ASSERT(r.log().choices.size() == (bound == 1 ? 0u : 64u));
  for (const Choice& c : r.log().choices) {
    RC_ASSERT(c.bound == bound);
    RC_ASSERT(bound == 0 || c.value < bound);
  }
}

// Forgiving mode (sim/random.h): a complete log gives back every recorded value and records the same
// log, whatever order the streams are named in.
TEST(RandomSource, ForgivingWithACompleteLogGivesTheRecordedValues) {
  auto rec = RandomSource::recording(99);
  const auto a = rec.stream("alpha"), b = rec.stream("beta");
  std::vector<int64_t> recorded;
  for (int i = 0; i < 20; ++i) {
    recorded.push_back(static_cast<int64_t>(rec.below(a, 10)));
    recorded.push_back(rec.between(b, -100, 100));
    recorded.push_back(rec.chance(a, 500'000) ? 1 : 0);
    recorded.push_back(rec.exponential(b, 1000));
    recorded.push_back(static_cast<int64_t>(rec.bits(a)));
  }
  for (const bool same_order : {true, false}) {
    auto f = RandomSource::forgiving(rec.log());
    EXPECT_TRUE(f.forgiving());
    EXPECT_FALSE(f.replaying());
    StreamId fa, fb;
    if (same_order) {
      fa = f.stream("alpha");
      fb = f.stream("beta");
    } else {
      fb = f.stream("beta");
      fa = f.stream("alpha");
    }
    std::vector<int64_t> again;
    for (int i = 0; i < 20; ++i) {
      again.push_back(static_cast<int64_t>(f.below(fa, 10)));
      again.push_back(f.between(fb, -100, 100));
      again.push_back(f.chance(fa, 500'000) ? 1 : 0);
      again.push_back(f.exponential(fb, 1000));
      again.push_back(static_cast<int64_t>(f.bits(fa)));
    }
    EXPECT_EQ(again, recorded) << "streams named in the same order: " << same_order;
    EXPECT_EQ(f.forgiven(), 0u);
    EXPECT_EQ(f.draws(), rec.draws());
    EXPECT_EQ(f.simplest().size(), f.log().choices.size());
    if (same_order) {
      EXPECT_EQ(f.log(), rec.log());
    }
  }
}

// A stream with nothing (left) in the log: every kind of draw gives its simplest value, and the
// draws are recorded so that the ordinary replay reproduces them.
TEST(RandomSource, ForgivingGivesTheSimplestValueWhenAStreamRunsOut) {
  auto f = RandomSource::forgiving(ChoiceLog{});
  const auto s = f.stream("s");
  EXPECT_EQ(f.below(s, 10), 0u);
  EXPECT_EQ(f.between(s, 5, 9), 5);
  EXPECT_EQ(f.between(s, -7, 7), -7);
  EXPECT_FALSE(f.chance(s, 999'999)) << "the simplest chance is no fault";
  EXPECT_FALSE(f.chance(s, 1));
  EXPECT_EQ(f.bits(s), 5u) << "a full-range draw's simplest value is its index, so identities differ";
  EXPECT_EQ(f.bits(s), 6u);
  // The shortest exponential: no recorded draw is shorter.
  const int64_t shortest = f.exponential(s, 1'000'000);
  auto rec = RandomSource::recording(3);
  const auto r = rec.stream("r");
  for (int i = 0; i < 500; ++i) EXPECT_LE(shortest, rec.exponential(r, 1'000'000));
  EXPECT_EQ(f.forgiven(), f.draws());
  ASSERT_EQ(f.simplest().size(), f.log().choices.size());
  EXPECT_EQ(f.simplest()[4], kPpmScale - 1) << "a chance's simplest value is the largest";
  EXPECT_EQ(f.simplest()[0], 0u);
  for (std::size_t i = 0; i < f.log().choices.size(); ++i) EXPECT_EQ(f.log().choices[i].value, f.simplest()[i]) << i;

  auto rep = RandomSource::replaying(f.log());
  const auto rs = rep.stream("s");
  EXPECT_EQ(rep.below(rs, 10), 0u);
  EXPECT_EQ(rep.between(rs, 5, 9), 5);
  EXPECT_EQ(rep.between(rs, -7, 7), -7);
  EXPECT_FALSE(rep.chance(rs, 999'999));
  EXPECT_FALSE(rep.chance(rs, 1));
  EXPECT_EQ(rep.bits(rs), 5u);
  EXPECT_EQ(rep.bits(rs), 6u);
  EXPECT_EQ(rep.exponential(rs, 1'000'000), shortest);
  EXPECT_FALSE(rep.divergence().has_value()) << *rep.divergence();
}

// A recorded choice with another bound, or a value outside the bound, is used up and gives the
// simplest value; the stream's next choice serves the next draw. Other streams are unaffected.
TEST(RandomSource, ForgivingGivesTheSimplestValueForAChoiceThatDoesNotFit) {
  std::vector<uint64_t> values;
  auto f = RandomSource::forgiving(small_log(&values));  // alpha(10), beta(20), alpha(10)
  const auto a = f.stream("alpha"), b = f.stream("beta"), c = f.stream("gamma");
  EXPECT_EQ(f.below(a, 7), 0u) << "another bound";
  EXPECT_EQ(f.forgiven(), 1u);
  EXPECT_EQ(f.below(b, 20), values[1]);
  EXPECT_EQ(f.below(a, 10), values[2]);
  EXPECT_EQ(f.below(a, 10), 0u) << "alpha has run out";
  EXPECT_EQ(f.below(c, 5), 0u) << "a stream the log does not name";
  EXPECT_EQ(f.forgiven(), 3u);
  EXPECT_FALSE(f.divergence().has_value());

  ChoiceLog outside;
  outside.streams = {"s"};
  outside.choices = {Choice{0, 10, 12}, Choice{0, 10, 3}};
  auto g = RandomSource::forgiving(outside);
  const auto s = g.stream("s");
  EXPECT_EQ(g.below(s, 10), 0u) << "a value outside its own bound";
  EXPECT_EQ(g.below(s, 10), 3u);
}

// A recorded chance keeps its outcome in forgiving mode; only a missing one turns into "no".
TEST(RandomSource, ForgivingKeepsRecordedChances) {
  auto rec = RandomSource::recording(11);
  const auto s = rec.stream("faults");
  std::vector<bool> outcomes;
  for (int i = 0; i < 64; ++i) outcomes.push_back(rec.chance(s, 500'000));
  ASSERT_NE(std::count(outcomes.begin(), outcomes.end(), true), 0);
  auto f = RandomSource::forgiving(rec.log());
  const auto fs = f.stream("faults");
  for (int i = 0; i < 64; ++i) EXPECT_EQ(f.chance(fs, 500'000), outcomes[static_cast<std::size_t>(i)]) << i;
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(f.chance(fs, 999'999));
}

RC_GTEST_PROP(RandomProp, BetweenStaysInRange, (int64_t a, int64_t b)) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const int64_t lo = std::min(a, b), hi = std::max(a, b);
  auto r = RandomSource::recording(seed);
  const auto s = r.stream("p");
  for (int i = 0; i < 32; ++i) {
    const int64_t v = r.between(s, lo, hi);
    RC_ASSERT(v >= lo);
    RC_ASSERT(v <= hi);
  }
}

RC_GTEST_PROP(RandomProp, ReplayOfARecordedLogGivesTheSameValues, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const auto bounds = *rc::gen::container<std::vector<uint64_t>>(interesting_bound());
  auto rec = RandomSource::recording(seed);
  const StreamId streams[2] = {rec.stream("one"), rec.stream("two")};
  std::vector<uint64_t> recorded;
  for (std::size_t i = 0; i < bounds.size(); ++i) recorded.push_back(rec.below(streams[i % 2], bounds[i]));
  auto rep = RandomSource::replaying(rec.log());
  const StreamId again[2] = {rep.stream("one"), rep.stream("two")};
  for (std::size_t i = 0; i < bounds.size(); ++i) RC_ASSERT(rep.below(again[i % 2], bounds[i]) == recorded[i]);
  RC_ASSERT(!rep.divergence().has_value());
}

// another(): recorded as {bound 2, value 1} without touching the generator; replayed as recorded; in
// forgiving mode a stream that ran out (or a recorded 0) says stop, and units() notes where it sits.
TEST(RandomSource, AnotherOpensAnOperationWithAChoiceOfItsOwn) {
  auto plain = RandomSource::recording(11);
  auto rec = RandomSource::recording(11);
  const auto p = plain.stream("s");
  const auto r = rec.stream("s");
  EXPECT_TRUE(rec.another(r));
  EXPECT_EQ(rec.below(r, 1'000), plain.below(p, 1'000)) << "another() draws nothing from the generator";
  EXPECT_TRUE(rec.another(r));
  ASSERT_EQ(rec.log().choices.size(), 3u);
  EXPECT_EQ(rec.log().choices[0], (Choice{0, 2, 1}));
  EXPECT_EQ(rec.log().choices[2], (Choice{0, 2, 1}));
  EXPECT_TRUE(rec.units().empty()) << "only forgiving mode notes operations";

  ChoiceLog stopped = rec.log();
  stopped.choices[2].value = 0;
  auto rep = RandomSource::replaying(stopped);
  const auto rs = rep.stream("s");
  EXPECT_TRUE(rep.another(rs));
  EXPECT_EQ(rep.below(rs, 1'000), rec.log().choices[1].value);
  EXPECT_FALSE(rep.another(rs)) << "a recorded 0 stops the actor";
  EXPECT_FALSE(rep.divergence().has_value());

  auto f = RandomSource::forgiving(rec.log());
  const auto other = f.stream("other");
  const auto fs = f.stream("s");
  EXPECT_FALSE(f.another(other)) << "a stream with nothing recorded stops at once";
  EXPECT_TRUE(f.another(fs));
  EXPECT_EQ(f.below(fs, 1'000), rec.log().choices[1].value);
  EXPECT_TRUE(f.another(fs));
  EXPECT_FALSE(f.another(fs)) << "a stream that ran out stops";
  EXPECT_EQ(f.units(), (std::vector<std::size_t>{0, 1, 3, 4}));
  EXPECT_EQ(f.simplest()[1], 0u);
}

}  // namespace
}  // namespace durasim::sim
