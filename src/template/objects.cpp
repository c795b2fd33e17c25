#include "template/objects.h"

#include "template/text.h"

namespace mw::tmpl {

void Namespace::release() {
    List held;
    for (auto& [k, v] : attrs.entries) {
        held.push_back(std::move(k));
        held.push_back(std::move(v));
    }
    attrs.entries.clear();
    bury(held);
}

std::string Namespace::repr() const {
    return "<Namespace " + tmpl::repr(Value::dict(attrs)) + ">";
}

std::optional<Value> Namespace::attribute(Evaluator&, std::string_view name) {
    if (const Value* v = attrs.find(name)) return *v;
    return std::nullopt;
}

std::string Function::repr() const {
    if (self_.is_undefined()) return fmt::format("<function {}>", name_);
    return fmt::format("<built-in method {} of {} object>", name_, tmpl::type_name(self_));
}

Value make_function(const char* name, NativeFn fn, Value self) {
    return Value::object(std::make_shared<Function>(name, fn, std::move(self)));
}

std::string Generator::repr() const {
    return fmt::format("<{} object>", type_);
}

bool Generator::next(Evaluator& ev, Value& out) {
    if (done_) return false;
    if (!next_(ev, out)) {
        done_ = true;
        return false;
    }
    return true;
}

Value make_generator(Evaluator& ev, const Value& source, std::function<bool(Evaluator&, Value&)> fn,
                     const char* type) {
    // The source is opened on the first read, as a Python generator starts when first resumed.
    struct State {
        Value source;
        std::optional<Iter> it;
        std::function<bool(Evaluator&, Value&)> fn;
    };
    int depth = 1;
    if (const Generator* g = source.object_as<Generator>()) depth = g->depth() + 1;
    if (depth > Generator::max_depth)
        throw_error(ErrorKind::limit, "generators (map, select, ...) chained more than {} deep",
                    Generator::max_depth);
    auto state = std::make_shared<State>(State{source, std::nullopt, std::move(fn)});
    auto generator = std::make_shared<Generator>(
        type,
        [state](Evaluator& e, Value& out) {
            if (!state->it) state->it.emplace(e, state->source);
            Value item;
            while (state->it->next(item)) {
                e.tick();
                if (state->fn(e, item)) {
                    out = std::move(item);
                    return true;
                }
            }
            return false;
        },
        depth);
    ev.track(generator);
    return Value::object(std::move(generator));
}

Value make_list_iterator(List items, const char* type) {
    auto state = std::make_shared<std::pair<List, size_t>>(std::move(items), 0);
    return Value::object(std::make_shared<Generator>(type, [state](Evaluator& e, Value& out) {
        if (state->second >= state->first.size()) return false;
        e.tick();
        out = state->first[state->second++];
        return true;
    }));
}

Value Macro::call(Evaluator& ev, const CallArgs& args) {
    return Value::string(ev.call_macro(sig_, body_, name_, closure_, args, caller_));
}

std::optional<Value> Macro::attribute(Evaluator&, std::string_view name) {
    if (name == "name") return Value::string(name_);
    if (name == "arguments") {
        List params;
        for (const auto& p : sig_.params) params.push_back(Value::string(p));
        return Value::tuple(std::move(params));
    }
    if (name == "catch_kwargs") return Value::boolean(sig_.catch_kwargs);
    if (name == "catch_varargs") return Value::boolean(sig_.catch_varargs);
    if (name == "caller") return Value::boolean(sig_.caller);
    return std::nullopt;
}

// ---- loop ----------------------------------------------------------------------------------

Loop::Loop(Evaluator& ev, const Value& iterable, const Value& source, const For* recursive_node,
           ScopePtr outer, int depth0)
    : ev_(ev),
      iterable_(source),
      it_(std::in_place, ev, source),
      recursive_(recursive_node),
      outer_(std::move(outer)),
      depth0_(depth0) {
    (void)iterable;
}

bool Loop::peek() {
    if (!pending_.empty()) return true;
    if (exhausted_) return false;
    Value v;
    if (it_ && it_->next(v)) {
        pending_.push_back(std::move(v));
        return true;
    }
    exhausted_ = true;
    return false;
}

bool Loop::advance(Value& item) {
    if (!peek()) return false;
    item = pending_.front();
    pending_.pop_front();
    ++index0_;
    before_ = current_;
    current_ = item;
    return true;
}

int64_t Loop::length() {
    if (length_) return *length_;
    switch (iterable_.kind()) {
        case Kind::undefined:
        case Kind::string:
        case Kind::list:
        case Kind::tuple:
        case Kind::dict:
            length_ = int64_t(tmpl::length(iterable_));
            return *length_;
        case Kind::object:
            if (const List* items = iterable_.object()->sequence()) {
                length_ = int64_t(items->size());
                return *length_;
            }
            break;
        default:
            break;
    }
    // A generator: read the rest now (Jinja2 does the same).
    Value v;
    while (!exhausted_ && it_ && it_->next(v)) {
        ev_.tick();
        pending_.push_back(std::move(v));
    }
    exhausted_ = true;
    length_ = index0_ + 1 + int64_t(pending_.size());
    return *length_;
}

void Loop::release() {
    it_.reset();
    pending_.clear();
    exhausted_ = true;
    iterable_ = current_ = before_ = Value();
    last_changed_.reset();
    outer_.reset();
}

std::string Loop::repr() const {
    return fmt::format("<LoopContext {}>", index0_ + 1);
}

Value Loop::call(Evaluator& ev, const CallArgs& args) {
    if (!recursive_)
        throw_error(ErrorKind::type,
                    "The loop must have the 'recursive' marker to be called recursively.");
    if (args.positional.size() != 1 || !args.keywords.empty())
        throw_error(ErrorKind::type, "loop() takes exactly one argument");
    return Value::string(ev.run_loop(*recursive_, outer_, args.positional[0], depth0_ + 1));
}

std::optional<Value> Loop::attribute(Evaluator&, std::string_view name) {
    if (name == "index0") return Value::integer(index0_);
    if (name == "index") return Value::integer(index0_ + 1);
    if (name == "first") return Value::boolean(index0_ == 0);
    if (name == "last") return Value::boolean(!peek());
    if (name == "length") return Value::integer(length());
    if (name == "revindex") return Value::integer(length() - index0_);
    if (name == "revindex0") return Value::integer(length() - index0_ - 1);
    if (name == "depth") return Value::integer(depth0_ + 1);
    if (name == "depth0") return Value::integer(depth0_);
    if (name == "previtem") {
        if (index0_ == 0) return Value::undefined("there is no previous item");
        return before_;
    }
    if (name == "nextitem") {
        if (!peek()) return Value::undefined("there is no next item");
        return pending_.front();
    }
    if (name == "cycle") {
        return make_function(
            "cycle",
            [](Evaluator&, const Value& self, const CallArgs& args) {
                if (args.positional.empty())
                    throw_error(ErrorKind::type, "no items for cycling given");
                const int64_t i = self.as_int();
                return args.positional[size_t(i) % args.positional.size()];
            },
            Value::integer(index0_));
    }
    if (name == "changed") {
        struct Changed : Object {
            std::shared_ptr<Loop> loop;
            explicit Changed(std::shared_ptr<Loop> l) : loop(std::move(l)) {}
            const char* type_name() const override { return "method"; }
            bool callable() const override { return true; }
            Value call(Evaluator&, const CallArgs& args) override {
                if (loop->last_changed_) {
                    const List& last = *loop->last_changed_;
                    bool same = last.size() == args.positional.size();
                    for (size_t i = 0; same && i < last.size(); ++i)
                        same = equal(last[i], args.positional[i]);
                    if (same) return Value::boolean(false);
                }
                loop->last_changed_ = args.positional;
                return Value::boolean(true);
            }
        };
        return Value::object(
            std::make_shared<Changed>(std::static_pointer_cast<Loop>(shared_from_this())));
    }
    return std::nullopt;
}

// ---- cycler, joiner ------------------------------------------------------------------------

Value Cycler::next_item() {
    if (items_.empty()) throw_error(ErrorKind::index, "list index out of range");
    Value v = items_[pos_];
    pos_ = (pos_ + 1) % items_.size();
    return v;
}

std::optional<Value> Cycler::attribute(Evaluator&, std::string_view name) {
    struct Method : Object {
        std::shared_ptr<Cycler> cycler;
        bool reset;
        Method(std::shared_ptr<Cycler> c, bool r) : cycler(std::move(c)), reset(r) {}
        const char* type_name() const override { return "method"; }
        bool callable() const override { return true; }
        Value call(Evaluator&, const CallArgs&) override {
            if (reset) {
                cycler->reset();
                return Value::none();
            }
            return cycler->next_item();
        }
    };
    if (name == "current") {
        if (items_.empty()) throw_error(ErrorKind::index, "list index out of range");
        return items_[pos_];
    }
    if (name == "next" || name == "reset")
        return Value::object(std::make_shared<Method>(
            std::static_pointer_cast<Cycler>(shared_from_this()), name == "reset"));
    return std::nullopt;
}

Value Joiner::call(Evaluator&, const CallArgs&) {
    if (!used_) {
        used_ = true;
        return Value::string("");
    }
    return Value::string(sep_);
}

}  // namespace mw::tmpl
