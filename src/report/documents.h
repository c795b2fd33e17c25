// Charts of memwall's JSON documents, as SVG:
// - a sustained bench (`bench --duration ... --json`, "kind": "memwall.sustained_bench"): tok/s
//   over time, and where the sensors exist temperature, CPU frequency and power;
// - a plan (`plan --json`, or mw_plan_json()): per model, the roofline of decode speed against
//   the weight bytes a token reads, each device's bandwidth ceiling and expected speed, one
//   point per quantization, and the point `bench --record` measured on this machine;
// - a bar chart spec ({"chart": "bars", "title": ..., "subtitle": [...], "footer": [...],
//   "panels": [{"title": ..., "y_label": ..., "groups": [...],
//   "series": [{"name": ..., "values": [...]}]}]}), which bench/compare writes.
// Errors (ErrorKind::invalid_argument) name the field at fault.
#pragma once

#include <string>

namespace mw {

std::string chart_svg(const std::string& document_json);

}  // namespace mw
