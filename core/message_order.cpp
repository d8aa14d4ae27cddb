// The first crossing of each link's messages (see message_order.h).
#include "core/message_order.h"

#include <algorithm>
#include <optional>
#include <tuple>

namespace zbpp {

std::vector<MessageCrossing> find_message_crossings(const Schedule& s) {
  std::vector<MessageCrossing> out;
  if (s.placement.empty() || s.m <= 0) return out;
  const VirtualStageMap map(s.placement);
  const int virtual_stages = map.virtual_stages();
  auto in_range = [&](const Op& op, int stage) {
    return op.mb >= 0 && op.mb < s.m && op.chunk >= 0 && op.chunk < static_cast<int>(s.placement[stage].size());
  };
  // The searches call this per candidate: one table, not a list per link. Each message is a
  // product (kind, producer virtual stage, microbatch), and its place in its link's order is
  // compared with the place where the receiver needs it; a link's ops are counted per stage.
  const size_t products = static_cast<size_t>(kProducts) * virtual_stages * s.m;
  const size_t links = static_cast<size_t>(kProducts) * s.p;  // of one stage: (kind, other stage)
  std::vector<int> table(products + 2 * links, -1);
  int* const sent_at = table.data();                // [product] -> its place on its link; -1: not sent
  int* const count = table.data() + products;        // [kind, other stage] -> messages so far
  int* const crossed = count + links;                // [kind, from] -> the link's crossing is found
  auto link = [&](Product what, int other) { return static_cast<size_t>(what) * s.p + other; };
  auto remote_send = [&](const Op& op, int stage) -> std::optional<Consumer> {
    if (!in_range(op, stage)) return std::nullopt;
    auto c = consumer_of(op, stage, map);
    return c && c->remote ? c : std::nullopt;
  };

  for (int from = 0; from < s.p; ++from) {
    std::fill(count, count + links, 0);
    for (const Op& op : s.stages[from])
      if (auto c = remote_send(op, from))
        sent_at[product_key(c->what, map.vs(from, op.chunk), op.mb, virtual_stages, s.m)] =
            count[link(c->what, c->stage)]++;
  }
  for (int to = 0; to < s.p; ++to) {
    std::fill(count, count + 2 * links, 0);
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
      // The n-th message sent (rare: only on a crossing); a link with fewer sends crosses nowhere before.
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
