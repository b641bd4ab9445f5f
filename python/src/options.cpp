// LoaderOptions from Python values: every check names the option it is about. The
// option and enum names are the C++ ones (plan/option_fields.h, option_names.h).
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "base/option_names.h"
#include "plan/option_fields.h"
#include "plan/option_ranges.h"
#include "python/src/bindings.h"

namespace forkfeed::python {
namespace {

[[noreturn]] void bad_value(const std::string& name, const std::string& what, py::handle got) {
  raise(Status::InvalidArgument(name + " must be " + what + ", got " + py::repr(got).cast<std::string>()));
}

[[noreturn]] void bad_type(const std::string& name, const std::string& what, py::handle got) {
  throw py::type_error(name + " must be " + what + ", got " + py::repr(got).cast<std::string>() + " (" +
                       py::str(py::type::handle_of(got).attr("__name__")).cast<std::string>() + ")");
}

// An int (not a bool) in the option's range (plan/option_ranges.h): a value outside,
// however the field's type would take it, gets the message validate() gives.
template <typename T>
T integer(const std::string& name, std::string_view field, py::handle value) {
  const OptionRange range = option_range<T>(field);
  if (PyBool_Check(value.ptr()) || !PyLong_Check(value.ptr())) bad_type(name, range.text(), value);
  const bool in = (range.zero_too && value.equal(py::int_(0))) ||
                  (py::int_(range.min) <= value && value <= py::int_(range.max));
  if (!in) raise(option_out_of_range(name, range, py::repr(value).cast<std::string>()));
  if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(value.cast<long long>());
  } else {
    return static_cast<T>(value.cast<unsigned long long>());
  }
}

bool boolean(const std::string& name, py::handle value) {
  if (!PyBool_Check(value.ptr())) bad_type(name, "True or False", value);
  return value.cast<bool>();
}

std::string string(const std::string& name, py::handle value) {
  if (!PyUnicode_Check(value.ptr())) bad_type(name, "a str", value);
  return value.cast<std::string>();
}

// The options that name files: a str, bytes or os.PathLike, turned into the bytes the
// system sees as os.fsencode() does, so that a name that is not UTF-8 (a str with
// surrogate escapes, or bytes) reaches the file it names.
bool names_a_path(std::string_view field) {
  return field == "image_folder" || field == "manifest" || field == "shards";
}

std::string path(const std::string& name, py::handle value) {
  const bool pathlike =
      PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) || py::hasattr(value, "__fspath__");
  if (!pathlike) bad_type(name, "a path (str, bytes or os.PathLike)", value);
  return py::module_::import("os").attr("fsencode")(value).cast<py::bytes>();
}

std::array<float, 3> three_floats(const std::string& name, py::handle value) {
  const std::string what = "a sequence of 3 numbers (R, G, B)";
  if (PyUnicode_Check(value.ptr()) || !PySequence_Check(value.ptr())) bad_type(name, what, value);
  py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
  if (seq.size() != 3) bad_value(name, what, value);
  std::array<float, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    py::object item = seq[i];
    if (PyBool_Check(item.ptr()) || !(PyFloat_Check(item.ptr()) || PyLong_Check(item.ptr()))) {
      bad_type(name, what, value);
    }
    out[i] = item.cast<float>();
    // A finite number that float32 turns into 0 or infinity (5e-324, 1e300) would reach
    // validate() as another number than the one given: refused here, as given.
    const double given = item.cast<double>();
    if (std::isfinite(given) && (!std::isfinite(out[i]) || (given != 0 && out[i] == 0))) {
      bad_value(name, "3 numbers float32 can hold (0, or a magnitude between 1.2e-38 and 3.4e38)", value);
    }
  }
  return out;
}

// One of the enum's C++ names, from base/option_names.h's table.
template <typename E>
E enumerated(const std::string& name, py::handle value) {
  std::string names;
  for (const EnumName<E>& e : kEnumNames<E>)
    names += (names.empty() ? "'" : ", '") + std::string(e.name) + "'";
  const std::string what = "one of " + names;
  if (!PyUnicode_Check(value.ptr())) bad_type(name, what, value);
  const std::optional<E> parsed = parse_enum<E>(value.cast<std::string>());
  if (!parsed) bad_value(name, what, value);
  return *parsed;
}

// Seconds (a float, like every timeout in Python) to LoaderOptions::task_timeout_ms,
// rounded up: a positive timeout never becomes 0, which means never.
std::uint32_t timeout_ms(const std::string& name, py::handle value) {
  const std::string what = "a number of seconds in [0, 4294967] (0: never)";
  if (PyBool_Check(value.ptr()) || !(PyFloat_Check(value.ptr()) || PyLong_Check(value.ptr()))) {
    bad_type(name, what, value);
  }
  const double seconds = value.cast<double>();
  if (!(seconds >= 0 && seconds <= 4294967.0)) bad_value(name, what, value);
  return static_cast<std::uint32_t>(std::ceil(seconds * 1000));
}

// The C++ name of a Python keyword (option_keyword()'s inverse), or empty.
std::string_view field_name(std::string_view keyword) {
  std::string_view field;
  LoaderOptions o;
  for_each_option(o, [&](std::string_view name, const auto&, OptionScope) {
    if (option_keyword(name) == keyword) field = name;
  });
  return field;
}

template <typename T>
T convert(const std::string& name, std::string_view field, py::handle value) {
  if constexpr (std::is_same_v<T, bool>) {
    return boolean(name, value);
  } else if constexpr (std::is_same_v<T, std::array<float, 3>>) {
    return three_floats(name, value);
  } else if constexpr (std::is_enum_v<T>) {
    return enumerated<T>(name, value);
  } else {
    return integer<T>(name, field, value);
  }
}

}  // namespace

std::string_view option_keyword(std::string_view field) {
  if (field == "image_folder") return "root";             // torchvision's ImageFolder(root)
  if (field == "task_timeout_ms") return "task_timeout";  // in seconds, as Python's timeouts are
  return field;
}

std::vector<std::string> option_keywords() {
  std::vector<std::string> out;
  LoaderOptions o;
  for_each_option(
      o, [&](std::string_view name, const auto&, OptionScope) { out.emplace_back(option_keyword(name)); });
  return out;
}

// The fields are plan/option_fields.h's; task_timeout is in seconds, as Python's are.
LoaderOptions loader_options_from_dict(const py::dict& options) {
  LoaderOptions o;
  for (auto [key, value] : options) {
    const std::string name = py::str(key).cast<std::string>();
    if (name == "task_timeout") {
      o.task_timeout_ms = timeout_ms(name, value);
      continue;
    }
    bool known = false;
    for_each_option(o, [&](std::string_view field, auto& out, OptionScope) {
      if (known || field != field_name(name)) return;
      using T = std::remove_cvref_t<decltype(out)>;
      if constexpr (std::is_same_v<T, std::string>) {
        out = names_a_path(field) ? path(name, value) : string(name, value);
      } else {
        out = convert<T>(name, field, value);
      }
      known = true;
    });
    if (!known) throw py::type_error("Loader() got an unexpected keyword argument '" + name + "'");
  }
  return o;
}

}  // namespace forkfeed::python
