// Rendering of the planner's and the probe's JSON (from the C API) as text for people.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace cli {

// Parses and frees a JSON string returned by the C API; fails with mw_last_error() on NULL.
nlohmann::json take_json(char* text, const std::string& doing);
// The Vulkan devices of mw_gpu_devices_json(), one line each, or why there are none.
void print_gpus(const nlohmann::json& gpus);

// 1536 -> "1.5 KiB", 3.2e9 -> "2.98 GiB".
std::string human_bytes(double bytes);
// A unix time as local "2025-01-31 14:05" ("never" for 0).
std::string human_time(int64_t unix_seconds);
// Tokens per second with sensible precision ("0.42", "7.3", "153").
std::string human_rate(double tok_s);
// Decode tok/s of a plan's budget row: the range from uniform to skewed routing ("2.1-6.3"), one
// figure where they agree (a dense model's layers).
std::string stream_rate(const nlohmann::json& budget_row);

// One table per model: memory per quantization, fit and decode speed per device, then each
// device's recommendation.
void print_plan(const nlohmann::json& plan);
// The probe's findings, one line per topic.
void print_probe(const nlohmann::json& probe);

}  // namespace cli
