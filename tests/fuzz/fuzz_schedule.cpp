// libFuzzer harness: schedule JSON -> ScheduleFile (the streamed and the DOM reader alike) ->
// validate; a schedule that validates must simulate (zbrun dereferences that timeline) and survive
// a write/read round trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "io/export_csv.h"
#include "tests/fuzz/fuzz_util.h"

using namespace zbpp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<Diag> diags;
  // What the programs read (the ops streamed from the parser) against the DOM reader: the same
  // schedule, the same diagnostics.
  std::vector<Diag> streamed_diags;
  auto streamed = schedule_from_text(text, "fuzz.json", &streamed_diags);
  auto j = parse_json_text(text, "fuzz.json", &diags);
  std::optional<ScheduleFile> file;
  if (j) file = schedule_from_json(*j, "fuzz.json", &diags);
  fuzz::require(format_diags(streamed_diags) == format_diags(diags) && diag_count(streamed_diags) == diag_count(diags),
                "the streamed reader says other than the DOM reader", streamed_diags);
  fuzz::require(streamed.has_value() == file.has_value() && (!file || streamed->schedule.stages == file->schedule.stages),
                "the streamed reader reads another schedule than the DOM reader");
  if (!j) {
    fuzz::require(!diags.empty(), "JSON rejected without a diagnostic");
    return 0;
  }
  if (!file) {
    fuzz::require(!diags.empty(), "schedule rejected without a diagnostic");
    (void)format_diags(diags);
    return 0;
  }
  diags = validate(file->schedule, file->problem, "fuzz.json");
  (void)format_diags(diags);
  if (!diags.empty()) return 0;
  auto timeline = simulate_timeline(file->schedule, file->problem, &diags);
  fuzz::require(timeline.has_value(), "a validated schedule does not simulate", diags);
  const std::string written = schedule_to_json_text(file->schedule, file->problem, *timeline);
  auto reread = parse_json_text(written, "written.json", &diags);
  fuzz::require(reread.has_value(), "a valid schedule was written as JSON that does not parse", diags);
  auto again = schedule_from_json(*reread, "written.json", &diags);
  fuzz::require(again.has_value(), "a valid schedule was written as a file that does not load", diags);
  fuzz::require(again->schedule.stages == file->schedule.stages, "the schedule does not read back the same");
  diags = validate(again->schedule, again->problem, "written.json");
  fuzz::require(diags.empty(), "a valid schedule does not validate once written and read back", diags);
  diags = check_recorded_figures(*again, *timeline, "written.json");
  fuzz::require(diags.empty(), "a written file's figures do not match its schedule", diags);
  (void)export_pytorch_csv(file->schedule);
  return 0;
}
