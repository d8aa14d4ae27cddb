// The first crossing of each link's messages (see message_order.h).
#include "core/message_order.h"

#include <algorithm>
#include <optional>
#include <tuple>

namespace zbpp {

std::vector<MessageCrossing> find_message_crossings(const Schedule& s) {
  std::vector<MessageCrossing> out;
  const int p = s.p;
  if (s.m <= 0 || static_cast<int>(s.placement.size()) != p || static_cast<int>(s.stages.size()) != p) return out;
  const VirtualStageMap map(s.placement);
  const int virtual_stages = map.virtual_stages();
  // Unsigned: one compare each for the low and the high end.
  auto in_range = [&](const Op& op, int stage) {
    return static_cast<unsigned>(op.mb) < static_cast<unsigned>(s.m) &&
           static_cast<unsigned>(op.chunk) < s.placement[stage].size();
  };
  // The searches call this per candidate and per swap: one table, no list per link (p² of them).
  // A message is a product (kind, producer virtual stage, microbatch), sent once: the n-th input
  // a receiver needs on a link is the n-th sent there exactly when that product's place in the
  // sender's order is n. The places are counted per stage, for each (kind, other stage).
  const size_t products = static_cast<size_t>(kProducts) * virtual_stages * s.m;
  const size_t links = static_cast<size_t>(kProducts) * p;
  std::vector<int> table(products + 2 * links, -1);
  int* const sent_at = table.data();          // [product] -> its place on its link; -1: not sent
  int* const count = sent_at + products;      // [kind, other stage] -> messages so far on that link
  int* const crossed = count + links;         // [kind, from] -> the link's first crossing is found
  auto link = [&](Product what, int other) { return static_cast<size_t>(what) * p + other; };
  auto remote_send = [&](const Op& op, int stage) -> std::optional<Consumer> {
    if (!in_range(op, stage)) return std::nullopt;
    auto c = consumer_of(op, stage, map);
    return c && c->remote ? c : std::nullopt;
  };

  for (int from = 0; from < p; ++from) {
    std::fill(count, count + links, 0);
    for (const Op& op : s.stages[from])
      if (auto c = remote_send(op, from))
        sent_at[product_key(c->what, map.vs(from, op.chunk), op.mb, virtual_stages, s.m)] =
            count[link(c->what, c->stage)]++;
  }
  for (int to = 0; to < p; ++to) {
    std::fill(count, crossed + links, 0);
    for (int i = 0; i < static_cast<int>(s.stages[to].size()); ++i) {
      const Op& op = s.stages[to][i];
      if (!in_range(op, to)) continue;
      auto d = dependency_of(op, to, map);
      if (!d || !d->remote) continue;
      const int from = map.stage_of[d->vs];
      const size_t at = link(d->what, from);
      if (crossed[at]) continue;
      const int n = count[at]++;
      if (sent_at[product_key(d->what, d->vs, d->mb, virtual_stages, s.m)] == n) continue;
      crossed[at] = 1;
      // The n-th message sent (looked up on a crossing only); where the link has fewer sends, the
      // lists agree as far as both go, and nothing crosses.
      int seen = 0;
      for (int j = 0; j < static_cast<int>(s.stages[from].size()); ++j) {
        auto c = remote_send(s.stages[from][j], from);
        if (!c || c->stage != to || c->what != d->what || seen++ != n) continue;
        out.push_back({d->what, from, to, n, j, c->vs, i, d->vs});
        break;
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const MessageCrossing& a, const MessageCrossing& b) {
    return std::tuple(a.from, a.to, a.what) < std::tuple(b.from, b.to, b.what);
  });
  return out;
}

}  // namespace zbpp
