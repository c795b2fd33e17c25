// Python's operators on template values: arithmetic (64-bit integers that raise on overflow
// instead of growing), comparisons, membership, and `~`.
#pragma once

#include "template/ast.h"
#include "template/value.h"

namespace mw::tmpl {

Value binary_op(Evaluator& ev, BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);
// a OP b for ==, !=, <, <=, >, >=, in, not in.
bool compare_op(Evaluator& ev, CompareOp op, const Value& a, const Value& b);
bool contains(Evaluator& ev, const Value& container, const Value& item);

}  // namespace mw::tmpl
