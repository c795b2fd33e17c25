#include "template/ops.h"

#include <cmath>

#include "template/evaluator.h"
#include "template/format.h"
#include "template/text.h"

namespace mw::tmpl {

namespace {

[[noreturn]] void unsupported(BinaryOp op, const Value& a, const Value& b) {
    throw_error(ErrorKind::type, "unsupported operand type(s) for {}: '{}' and '{}'", symbol(op),
                type_name(a), type_name(b));
}

[[noreturn]] void overflow() {
    throw_error(ErrorKind::overflow, "integer result does not fit in 64 bits");
}

template <typename Op>
Value checked(Op op, int64_t a, int64_t b) {
    int64_t r;
    if (op(a, b, &r)) overflow();
    return Value::integer(r);
}

double float_floordiv(double vx, double wx) {
    if (wx == 0.0) throw_error(ErrorKind::zero_division, "float floor division by zero");
    double mod = std::fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0.0 && ((wx < 0) != (mod < 0))) div -= 1.0;
    if (div == 0.0) return std::copysign(0.0, vx / wx);
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return floordiv;
}

double float_mod(double vx, double wx) {
    if (wx == 0.0) throw_error(ErrorKind::zero_division, "float modulo");
    double mod = std::fmod(vx, wx);
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0)) mod += wx;
    } else {
        mod = std::copysign(0.0, wx);
    }
    return mod;
}

Value repeat(Evaluator& ev, const Value& seq, int64_t n) {
    if (n <= 0)
        return seq.is_string() ? Value::string("")
               : seq.is_list() ? Value::list({})
                               : Value::tuple({});
    const size_t unit = seq.is_string() ? seq.str().size() : seq.items().size() * sizeof(Value);
    if (unit != 0 && uint64_t(n) > ev.context().limits.max_output_bytes / unit)
        throw_error(ErrorKind::limit, "a value of more than {} bytes",
                    ev.context().limits.max_output_bytes);
    ev.charge(unit * size_t(n));
    if (seq.is_string()) {
        std::string out;
        out.reserve(unit * size_t(n));
        for (int64_t i = 0; i < n; ++i) out += seq.str();
        return seq.is_markup() ? Value::markup(std::move(out)) : Value::string(std::move(out));
    }
    List out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    return seq.is_list() ? Value::list(std::move(out)) : Value::tuple(std::move(out));
}

Value int_pow(int64_t base, int64_t exp) {
    if (exp < 0) {
        if (base == 0)
            throw_error(ErrorKind::zero_division, "0.0 cannot be raised to a negative power");
        return Value::number(std::pow(double(base), double(exp)));
    }
    int64_t result = 1;
    while (exp > 0) {
        if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) overflow();
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
    }
    return Value::integer(result);
}

Value float_pow(double a, double b) {
    if (a == 0.0 && b < 0)
        throw_error(ErrorKind::zero_division, "0.0 cannot be raised to a negative power");
    if (a < 0 && b != std::floor(b))
        throw_error(ErrorKind::value, "a negative number to a fractional power is complex");
    const double r = std::pow(a, b);
    if (std::isinf(r) && std::isfinite(a) && std::isfinite(b))
        throw_error(ErrorKind::overflow, "(34, 'Numerical result out of range')");
    return Value::number(r);
}

}  // namespace

Value binary_op(Evaluator& ev, BinaryOp op, const Value& a, const Value& b) {
    // str % x formats x, whatever it is (an undefined value prints as "").
    if (op == BinaryOp::mod && a.is_string()) {
        std::string out = format_percent(ev, a.str(), b, a.is_markup());
        return a.is_markup() ? Value::markup(std::move(out)) : Value::string(std::move(out));
    }
    if (a.is_undefined()) a.fail_undefined();
    if (b.is_undefined()) b.fail_undefined();
    const bool numbers = a.is_number() && b.is_number();
    const bool floats = numbers && (a.is_float() || b.is_float());
    switch (op) {
        case BinaryOp::add:
            if (floats) return Value::number(a.as_double() + b.as_double());
            if (numbers)
                return checked([](int64_t x, int64_t y,
                                  int64_t* r) { return __builtin_add_overflow(x, y, r); },
                               a.as_int(), b.as_int());
            if (a.is_string() && b.is_string()) {
                ev.check_size(a.str().size() + b.str().size());
                ev.charge(a.str().size() + b.str().size());
                // Markup + str escapes the str (and str + Markup: Markup.__radd__ goes first).
                if (a.is_markup() || b.is_markup())
                    return Value::markup(escape(a).str() + escape(b).str());
                return Value::string(a.str() + b.str());
            }
            if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
                List out = a.items();
                out.insert(out.end(), b.items().begin(), b.items().end());
                ev.check_size(out.size() * sizeof(Value));
                ev.charge(out.size() * sizeof(Value));
                return a.is_list() ? Value::list(std::move(out)) : Value::tuple(std::move(out));
            }
            if (a.is_string() || a.is_list() || a.is_tuple())
                throw_error(ErrorKind::type, "can only concatenate {} (not \"{}\") to {}",
                            type_name(a), type_name(b), type_name(a));
            unsupported(op, a, b);
        case BinaryOp::sub:
            if (floats) return Value::number(a.as_double() - b.as_double());
            if (numbers)
                return checked([](int64_t x, int64_t y,
                                  int64_t* r) { return __builtin_sub_overflow(x, y, r); },
                               a.as_int(), b.as_int());
            unsupported(op, a, b);
        case BinaryOp::mul:
            if (floats) return Value::number(a.as_double() * b.as_double());
            if (numbers)
                return checked([](int64_t x, int64_t y,
                                  int64_t* r) { return __builtin_mul_overflow(x, y, r); },
                               a.as_int(), b.as_int());
            if ((a.is_string() || a.is_sequence()) && b.is_integral())
                return repeat(ev, a, b.as_int());
            if ((b.is_string() || b.is_sequence()) && a.is_integral())
                return repeat(ev, b, a.as_int());
            if (a.is_string() || a.is_sequence() || b.is_string() || b.is_sequence())
                throw_error(ErrorKind::type, "can't multiply sequence by non-int of type '{}'",
                            type_name(a.is_string() || a.is_sequence() ? b : a));
            unsupported(op, a, b);
        case BinaryOp::div:
            if (!numbers) unsupported(op, a, b);
            if (b.as_double() == 0.0) throw_error(ErrorKind::zero_division, "division by zero");
            return Value::number(a.as_double() / b.as_double());
        case BinaryOp::floordiv:
            if (!numbers) unsupported(op, a, b);
            if (floats) return Value::number(float_floordiv(a.as_double(), b.as_double()));
            {
                const int64_t x = a.as_int(), y = b.as_int();
                if (y == 0)
                    throw_error(ErrorKind::zero_division, "integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) overflow();
                int64_t q = x / y;
                if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                return Value::integer(q);
            }
        case BinaryOp::mod:
            if (!numbers) unsupported(op, a, b);
            if (floats) return Value::number(float_mod(a.as_double(), b.as_double()));
            {
                const int64_t x = a.as_int(), y = b.as_int();
                if (y == 0) throw_error(ErrorKind::zero_division, "integer modulo by zero");
                if (y == -1) return Value::integer(0);
                int64_t r = x % y;
                if (r != 0 && ((r < 0) != (y < 0))) r += y;
                return Value::integer(r);
            }
        case BinaryOp::pow:
            if (!numbers) unsupported(op, a, b);
            if (floats) return float_pow(a.as_double(), b.as_double());
            return int_pow(a.as_int(), b.as_int());
    }
    unsupported(op, a, b);
}

Value negate(const Value& v) {
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_float()) return Value::number(-v.as_double());
    if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) overflow();
        return Value::integer(-v.as_int());
    }
    throw_error(ErrorKind::type, "bad operand type for unary -: '{}'", type_name(v));
}

Value unary_plus(const Value& v) {
    if (v.is_undefined()) v.fail_undefined();
    if (v.is_float()) return v;
    if (v.is_integral()) return Value::integer(v.as_int());
    throw_error(ErrorKind::type, "bad operand type for unary +: '{}'", type_name(v));
}

namespace {

bool ordered(CompareOp op, const Value& a, const Value& b) {
    const char* sym = op == CompareOp::lt   ? "<"
                      : op == CompareOp::le ? "<="
                      : op == CompareOp::gt ? ">"
                                            : ">=";
    if (a.is_undefined()) a.fail_undefined();
    if (b.is_undefined()) b.fail_undefined();
    const auto apply = [op](auto x, auto y) {
        switch (op) {
            case CompareOp::lt:
                return x < y;
            case CompareOp::le:
                return x <= y;
            case CompareOp::gt:
                return x > y;
            default:
                return x >= y;
        }
    };
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return apply(a.as_double(), b.as_double());
        return apply(a.as_int(), b.as_int());
    }
    if (a.is_string() && b.is_string()) return apply(a.str(), b.str());
    if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
        const List& x = a.items();
        const List& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equal(x[i], y[i])) return ordered(op, x[i], y[i]);
        return apply(x.size(), y.size());
    }
    throw_error(ErrorKind::type, "'{}' not supported between instances of '{}' and '{}'", sym,
                type_name(a), type_name(b));
}

}  // namespace

bool contains(Evaluator& ev, const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::string:
            if (!item.is_string()) {
                if (item.is_undefined()) item.fail_undefined();
                throw_error(ErrorKind::type,
                            "'in <string>' requires string as left operand, not {}",
                            type_name(item));
            }
            return container.str().find(item.str()) != std::string::npos;
        case Kind::list:
        case Kind::tuple:
            for (const Value& v : container.items())
                if (equal(v, item)) return true;
            return false;
        case Kind::dict:
            check_hashable(item);
            return container.dict().find(item) != nullptr;
        case Kind::undefined:
            return false;
        case Kind::object:
            if (const List* items = container.object()->sequence()) {
                for (const Value& v : *items)
                    if (equal(v, item)) return true;
                return false;
            }
            if (container.object()->is_iterator()) {
                Value v;
                while (container.object()->next(ev, v)) {
                    ev.tick();
                    if (equal(v, item)) return true;
                }
                return false;
            }
            [[fallthrough]];
        default:
            throw_error(ErrorKind::type, "argument of type '{}' is not iterable",
                        type_name(container));
    }
}

bool compare_op(Evaluator& ev, CompareOp op, const Value& a, const Value& b) {
    switch (op) {
        case CompareOp::eq:
            return equal(a, b);
        case CompareOp::ne:
            return !equal(a, b);
        case CompareOp::in:
            return contains(ev, b, a);
        case CompareOp::not_in:
            return !contains(ev, b, a);
        default:
            return ordered(op, a, b);
    }
}

}  // namespace mw::tmpl
