// FanoutAccount (properties/fanout_account.h) against FanoutModel::accounting over the same rows:
// after random sequences of manifests and delivery rows put and erased (rows of keys without a
// manifest, of another generation, for targets outside the manifest's, manifests whose remaining is
// wrong or not positive, unsorted target lists, a row id reused for another key), asked at random
// moments, fault() gives what accounting() gives over every row, and the rows it keeps are the ones
// put and not erased since.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "model/fanout_model.h"
#include "properties/fanout_account.h"

namespace durasim::properties {
namespace {

using model::FanoutDelivery;
using model::FanoutManifest;
using model::FanoutModel;

const std::vector<std::string> kKeys = {"k0", "k1", "k2", "k3"};
const std::vector<std::string> kTargets = {"a", "b", "c"};
const std::vector<std::string> kGenerations = {"g0", "g1"};

rc::Gen<std::string> oneOf(const std::vector<std::string>& values) { return rc::gen::elementOf(values); }
// Mostly the generation every row has, so that the other rules get their turn.
rc::Gen<std::string> generation() { return rc::gen::weightedOneOf<std::string>({{5, rc::gen::just<std::string>("g1")}, {1, oneOf(kGenerations)}}); }
// Mostly a count a manifest of a few targets can have.
rc::Gen<int64_t> remaining() { return rc::gen::weightedOneOf<int64_t>({{4, rc::gen::inRange<int64_t>(1, 4)}, {1, rc::gen::inRange<int64_t>(-1, 5)}}); }

FanoutManifest manifestOf(const std::string& key, std::vector<std::string> targets, int64_t remaining, const std::string& generation) {
  FanoutManifest m;
  m.key = key;
  m.id = "id-" + key;
  m.targets = std::move(targets);
  m.remaining = remaining;
  m.generation = generation;
  return m;
}

FanoutDelivery deliveryOf(const std::string& key, const std::string& target, const std::string& generation) {
  FanoutDelivery d;
  d.key = key;
  d.target = target;
  d.generation = generation;
  return d;
}

// One step against both the account and the plain maps accounting() reads.
struct Rows {
  FanoutAccount account;
  std::map<std::string, FanoutManifest> manifests;
  std::map<std::string, FanoutDelivery> deliveries;

  void step() {
    switch (*rc::gen::inRange(0, 4)) {
      case 0: {
        const std::string key = *oneOf(kKeys);
        // A subset of the targets, mostly sorted (as stored), sometimes reversed.
        std::vector<std::string> targets;
        for (const std::string& target : kTargets)
          if (*rc::gen::arbitrary<bool>()) targets.push_back(target);
        if (*rc::gen::inRange(0, 4) == 0) std::reverse(targets.begin(), targets.end());
        const FanoutManifest m = manifestOf(key, targets, *remaining(), *generation());
        account.putManifest(m);
        manifests[key] = m;
        return;
      }
      case 1: {
        const std::string key = *oneOf(kKeys);
        account.eraseManifest(key);
        manifests.erase(key);
        return;
      }
      case 2: {
        // The row id names (key, target); now and then the row's own key is another one.
        const std::string idKey = *oneOf(kKeys), target = *oneOf(kTargets);
        const std::string key = *rc::gen::inRange(0, 6) == 0 ? *oneOf(kKeys) : idKey;
        const FanoutDelivery d = deliveryOf(key, target, *generation());
        const std::string id = idKey + "/" + target;
        account.putDelivery(id, d);
        deliveries[id] = d;
        return;
      }
      default: {
        const std::string id = *oneOf(kKeys) + "/" + *oneOf(kTargets);
        account.eraseDelivery(id);
        deliveries.erase(id);
        return;
      }
    }
  }
};

RC_GTEST_PROP(FanoutAccount, FaultIsTheAccountingOfTheRowsAsTheyStand, ()) {
  Rows rows;
  const int steps = *rc::gen::inRange(1, 60);
  for (int i = 0; i < steps; ++i) {
    rows.step();
    if (*rc::gen::inRange(0, 3) != 0) continue;
    RC_ASSERT(rows.account.manifests() == rows.manifests);
    RC_ASSERT(rows.account.deliveries() == rows.deliveries);
    RC_ASSERT(rows.account.fault() == FanoutModel::accounting(rows.manifests, rows.deliveries));
  }
  RC_ASSERT(rows.account.fault() == FanoutModel::accounting(rows.manifests, rows.deliveries));
}

TEST(FanoutAccount, AKeyJudgedAgainWhenOneOfItsRowsChanges) {
  FanoutAccount account;
  account.putManifest(manifestOf("k", {"a", "b"}, 2, "g1"));
  account.putDelivery("k/a", deliveryOf("k", "a", "g1"));
  EXPECT_EQ(account.fault(), "manifest k has remaining 2 for 1 live rows");
  account.putDelivery("k/b", deliveryOf("k", "b", "g1"));
  EXPECT_EQ(account.fault(), std::nullopt);
  account.putDelivery("k/b", deliveryOf("k", "b", "g0"));
  EXPECT_EQ(account.fault(), "delivery row k/b is of generation g0, its manifest of g1");
  account.eraseDelivery("k/b");
  account.putManifest(manifestOf("k", {"a", "b"}, 1, "g1"));
  EXPECT_EQ(account.fault(), std::nullopt);
  account.eraseManifest("k");
  EXPECT_EQ(account.fault(), "delivery row k/a has no manifest");
  account.eraseDelivery("k/a");
  EXPECT_EQ(account.fault(), std::nullopt);
  EXPECT_TRUE(account.manifests().empty());
  EXPECT_TRUE(account.deliveries().empty());
}

TEST(FanoutAccount, ARowMovedToAnotherKeyLeavesItsOldKey) {
  FanoutAccount account;
  account.putManifest(manifestOf("k", {"a"}, 1, "g1"));
  account.putDelivery("k/a", deliveryOf("k", "a", "g1"));
  EXPECT_EQ(account.fault(), std::nullopt);
  account.putDelivery("k/a", deliveryOf("j", "a", "g1"));  // the same row id, now of key j
  EXPECT_EQ(account.fault(), "delivery row k/a has no manifest");
  account.putManifest(manifestOf("j", {"a"}, 1, "g1"));
  EXPECT_EQ(account.fault(), "manifest k has remaining 1 for 0 live rows");
}

TEST(FanoutAccount, ARowForATargetOutsideItsManifest) {
  FanoutAccount account;
  account.putManifest(manifestOf("k", {"a", "b"}, 2, "g1"));
  account.putDelivery("k/a", deliveryOf("k", "a", "g1"));
  account.putDelivery("k/c", deliveryOf("k", "c", "g1"));
  EXPECT_EQ(account.fault(), "manifest k has a row for c, which is not among its targets");
}

}  // namespace
}  // namespace durasim::properties
