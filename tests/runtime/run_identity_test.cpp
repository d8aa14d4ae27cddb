// The ranks' run identities compared (issue 34): ranks that agree pass; a rank with another seed,
// split, data, model or optimizer flag is named with both values; a data file counts by its bytes.
#include "runtime/run_identity.h"

#include <catch2/catch.hpp>

using namespace zbpp;

namespace {

struct Ranks {
  GptConfig model = *gpt_preset("tiny");
  DataSource data = *DataSource::open("synthetic", nullptr);
  std::uint64_t seed = 1;
  AdamWConfig adamw;
  std::string text() const { return identity_json(run_identity(42, model, 2, seed, data, adamw)).dump(); }
};

}  // namespace

TEST_CASE("run identity: ranks that agree pass") {
  Ranks r;
  CHECK(ranks_disagree({r.text(), r.text(), r.text()}).empty());
  CHECK(ranks_disagree({r.text()}).empty());
}

TEST_CASE("run identity: a rank that differs is named with its value and rank 0's") {
  Ranks a, b;
  SECTION("seed") {
    b.seed = 7;
    CHECK(ranks_disagree({a.text(), a.text(), b.text()}).rfind("rank 2 has --seed 7, rank 0 has --seed 1: every rank of a job must run the same", 0) == 0);
  }
  SECTION("split") {
    b.model.split = {1, 3};
    CHECK(ranks_disagree({a.text(), b.text()}).rfind("rank 1 has layer split 1,3, rank 0 has layer split 2,2:", 0) == 0);
  }
  SECTION("optimizer: only the AdamW settings that differ are shown") {
    b.adamw.beta2 = 0.99f;
    CHECK(ranks_disagree({a.text(), b.text()}).rfind("rank 1 has --lr 0.001 --clip-norm 1, AdamW beta2 0.99, rank 0 has --lr 0.001 --clip-norm 1, AdamW beta2 0.999:", 0) == 0);
  }
  SECTION("model, and the split it implies; several ranks") {
    b.model = *gpt_preset("small");
    const std::string why = ranks_disagree({a.text(), b.text(), b.text(), b.text()});
    CHECK(why.rfind("rank 1 has --model small (", 0) == 0);
    CHECK(why.find("), rank 0 has --model tiny (") != std::string::npos);
    CHECK(why.find("(ranks 2, 3 differ from rank 0 too)") != std::string::npos);
    CHECK(why.find("; rank 1 has layer split 3,3, rank 0 has layer split 2,2") != std::string::npos);
  }
}
