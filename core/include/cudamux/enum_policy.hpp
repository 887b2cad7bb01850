// The central enum mapping policy (docs/policy.md): what a program sees when a
// backend produces a value its CUDA enum type has no name for.
//
// Backends only report "no counterpart"; this decides, per CUDA enum type:
//   strict (default)  -> the type's generic value (e.g. CUDA_ERROR_UNKNOWN), warning logged;
//   hallucinate       -> an invented value that collides with nothing the CUDA 13.0
//                        headers define for the type, stable per backend value within the
//                        process, distinct across backend values, with a name and a
//                        description that the error-string functions return.
// Enum values the program passes in are never hallucinated (rule 4).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

#pragma GCC visibility push(default)

namespace cudamux::policy {

class PolicyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The backend value behind a result (rule 3: libraries that map one CUDA type onto
// another, like libcudart's CUresult -> cudaError_t, ask again with the same pair).
struct Origin {
  std::string backend;
  std::int32_t native = 0;
  std::string native_name;
};

// An invented constant, as the error-string functions report it.
struct Invented {
  std::int64_t value;
  std::string name;
  std::string description;
  Origin origin;
};

// Registers an enum type the policy knows (cuda.h's types are built in; libcudart and
// libnvrtc add theirs). `output`: values of it can reach the program (only those may be
// hallucinated). Re-registering the same name is a no-op; registrations survive
// reset_for_testing.
void register_type(std::string_view type, bool output, std::span<const std::int64_t> defined);
[[nodiscard]] bool known_type(std::string_view type);
[[nodiscard]] bool is_output_type(std::string_view type);

// Applies the settings: the TOML [hallucinate] table (may be null; `source` names the
// file for messages), then CUDAMUX_<Type>_HALLUCINATE variables. Throws PolicyError
// naming the file/line/column/key or the variable, its value and the accepted values.
void configure(const toml::table* hallucinate, const std::string& source);

// Run-time switch (cudamuxSetHallucinate). False + error text when refused.
bool set_hallucinate(std::string_view type, bool enable, std::string* error = nullptr);
[[nodiscard]] std::optional<bool> hallucinate(std::string_view type);

// Maps a backend value without a counterpart in `type`: returns the generic value
// (strict) or the invented one (hallucinate), logging as the policy says.
std::int64_t unmapped(std::string_view type, std::string_view backend, std::int32_t native,
                      std::string_view native_name, std::int64_t generic);

// The invented constant of `type` with this value, if the policy made one.
[[nodiscard]] std::optional<Invented> invented(std::string_view type, std::int64_t value);

// The backend value behind `value`, a result of `type` this thread just got from the
// core: the origin of an invented value, or, when `value` is `generic`, the backend value
// this thread's last strict mapping of `type` turned into it (taken: asked once).
[[nodiscard]] std::optional<Origin> origin_of(std::string_view type, std::int64_t value, std::int64_t generic);

// Parses a boolean in the accepted spellings (1/true/t/yes/y, 0/false/f/no/n, any case).
[[nodiscard]] std::optional<bool> parse_bool(std::string_view text);

// Test support: forget every setting and invented value.
void reset_for_testing();

}  // namespace cudamux::policy

#pragma GCC visibility pop
