// What torch.ops.brrr.NAME does on every call, in C++ (pipeline/validation/native_library.py
// builds and loads it; torch_library.py registers through it):
//
// - torch.ops.brrr_native.autograd(...) gives torch.ops.NS.NAME an Autograd kernel that saves the
//   tensors the spec names and whose graph node calls torch.ops.NS.NAME_backward with them;
// - torch.ops.brrr_native.route(...) makes NS.NAME (or NAME_backward) on one dispatch key call an
//   extension's own C++ op (binding.cpp's forward) directly, where Python's kernel called it through
//   torch.ops: the same arguments, the same results, a clone of any result that is a view or shares
//   an input's memory (a custom op may not return those), the gradients backward's schema returns
//   picked from one per input.
//
// Why not torch.library.register_autograd: its forward goes through a Python autograd.Function
// (pytree, defaults filled again, a Python frame per layer) and its backward node takes the GIL on
// the autograd engine's device thread. Measured on an H200 (benchmarks/host_layers.py) that was most
// of the host time of a brrr op under autograd, two to three times eager's for the same call. This
// node is what PyTorch's generated code does for its own ops: the op below autograd, then one graph
// node holding SavedVariables; nothing here runs Python.
//
// The contract (pipeline/op/contract.py): forward(*inputs, *params) -> (*outputs, *stats);
// backward(*grad_outputs, *saved, *params) -> the gradients of the inputs at grad_positions.
// Stats (a layer norm's mean) are results without a gradient: marked non-differentiable.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;
// torch 2.13 holds graph nodes in intrusive_ptr, earlier versions in shared_ptr: whichever getptr gives.
using NodePtr = decltype(std::declval<Node&>().getptr());

template <class N>
auto make_node() {
    if constexpr (std::is_same_v<NodePtr, std::shared_ptr<Node>>) {
        // deleteNode frees a long chain of nodes without recursing (found by argument lookup: only
        // the versions that hold nodes in shared_ptr declare it).
        return std::shared_ptr<N>(new N(), [](N* n) { deleteNode(n); });
    } else {
        return c10::make_intrusive<N>();
    }
}

struct Formula {
    int64_t inputs;                  // tensor arguments first in the schema
    int64_t outputs;                 // differentiable results first among the returns
    std::vector<int64_t> saved;      // positions in (*inputs, *results)
    std::vector<int64_t> positions;  // the inputs backward returns gradients for, in its order
    c10::OperatorHandle backward;
};

struct OutputShape {
    std::vector<int64_t> sizes;
    at::TensorOptions options;
    bool tracked;  // a floating-point output, with this node as its grad_fn; others get no gradient
};

struct BrrrBackward : Node {
    std::shared_ptr<const Formula> formula;
    std::vector<c10::IValue> params;
    std::vector<SavedVariable> saved;
    std::vector<OutputShape> shapes;  // one per output; an unused output's gradient is zeros of its shape

    std::string name() const override { return "BrrrBackward(" + formula->backward.schema().name() + ")"; }

    variable_list apply(variable_list&& grads) override {
        torch::jit::Stack stack;
        stack.reserve(grads.size() + saved.size() + params.size());
        size_t next = 0;
        for (const auto& shape : shapes) {
            const at::Tensor* g = shape.tracked ? &grads[next++] : nullptr;
            stack.emplace_back(g && g->defined() ? g->contiguous() : at::zeros(shape.sizes, shape.options));
        }
        const NodePtr self = getptr();
        for (auto& s : saved) stack.emplace_back(s.unpack(self));
        for (const auto& p : params) stack.push_back(p);
        formula->backward.callBoxed(&stack);
        variable_list result(static_cast<size_t>(formula->inputs));
        const auto& positions = formula->positions;
        TORCH_CHECK(stack.size() == positions.size(), formula->backward.schema().name(), " returned ", stack.size(),
                    " values for ", positions.size(), " gradients");
        for (size_t k = 0; k < positions.size(); ++k) {
            const auto i = static_cast<size_t>(positions[k]);
            if (task_should_compute_output(i) && stack[k].isTensor()) result[i] = stack[k].toTensor();
        }
        return result;
    }

    void release_variables() override {
        for (auto& s : saved) s.reset_data();
    }
};

class AutogradKernel final : public c10::OperatorKernel {
   public:
    explicit AutogradKernel(std::shared_ptr<const Formula> formula) : formula_(std::move(formula)) {}

    void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
        const auto n_args = op.schema().arguments().size();
        const auto args = torch::jit::last(*stack, n_args);
        std::vector<at::Tensor> inputs;
        inputs.reserve(static_cast<size_t>(formula_->inputs));
        for (int64_t i = 0; i < formula_->inputs; ++i) inputs.push_back(args[i].toTensor());
        const bool grad = torch::autograd::compute_requires_grad(inputs);
        std::vector<c10::IValue> params;
        if (grad) params.assign(args.begin() + formula_->inputs, args.end());
        {
            at::AutoDispatchBelowADInplaceOrView below;
            op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
        }
        if (!grad) return;
        const auto n_results = op.schema().returns().size();
        const auto results = torch::jit::last(*stack, n_results);
        auto node = make_node<BrrrBackward>();
        node->formula = formula_;
        node->params = std::move(params);
        node->set_next_edges(torch::autograd::collect_next_edges(inputs));
        std::vector<at::Tensor> outputs;
        for (int64_t j = 0; j < formula_->outputs; ++j) {
            const at::Tensor& y = results[j].toTensor();
            const bool tracked = torch::autograd::isDifferentiableType(y.scalar_type());
            if (tracked) outputs.push_back(y);
            node->shapes.push_back({y.sizes().vec(), y.options(), tracked});
        }
        torch::autograd::set_history(outputs, node);
        for (const auto p : formula_->saved) {
            if (p < formula_->inputs) {
                node->saved.emplace_back(inputs[p], false);
            } else {
                const int64_t j = p - formula_->inputs;
                node->saved.emplace_back(results[j].toTensor(), j < formula_->outputs && node->shapes[j].tracked);
            }
        }
    }

   private:
    std::shared_ptr<const Formula> formula_;
};

class RouteKernel final : public c10::OperatorKernel {
   public:
    RouteKernel(c10::OperatorHandle target, std::vector<int64_t> pick, int64_t inputs)
        : target_(std::move(target)), pick_(std::move(pick)), inputs_(inputs) {}

    void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
        std::vector<at::Tensor> given;
        for (const auto& a : torch::jit::last(*stack, op.schema().arguments().size())) {
            if (a.isTensor()) given.push_back(a.toTensor());
        }
        target_.callBoxed(stack);
        const auto n = target_.schema().returns().size();
        std::vector<c10::IValue> results(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
        torch::jit::drop(*stack, n);
        if (results.size() == 1 && results[0].isTensorList()) {  // a binding returning std::vector<at::Tensor>
            const auto list = results[0].toTensorVector();
            results.assign(list.begin(), list.end());
        }
        if (!pick_.empty() && results.size() == static_cast<size_t>(inputs_) && results.size() != pick_.size()) {
            std::vector<c10::IValue> picked;
            for (const auto i : pick_) picked.push_back(results[static_cast<size_t>(i)]);
            results = std::move(picked);
        }
        TORCH_CHECK(results.size() == op.schema().returns().size(), target_.schema().name(), " returned ",
                    results.size(), " results where ", op.schema().name(), " returns ", op.schema().returns().size());
        for (auto& r : results) {
            if (!r.isTensor()) continue;
            const at::Tensor& t = r.toTensor();
            bool shared = t.defined() && t.is_view();
            for (const auto& g : given) shared = shared || (t.defined() && g.defined() && t.is_alias_of(g));
            if (shared) r = t.clone();
        }
        for (auto& r : results) stack->push_back(std::move(r));
    }

   private:
    c10::OperatorHandle target_;
    std::vector<int64_t> pick_;  // backward: the inputs whose gradients the schema returns
    int64_t inputs_;             // backward: how many gradients a binding returning one per input gives
};

// Each registration's library lives as long as the process: torch keeps pointers into it, and
// Python may still dispatch to it while the interpreter shuts down.
std::vector<torch::Library*>& libraries() {
    static auto* kept = new std::vector<torch::Library*>();
    return *kept;
}

std::mutex& registering() {
    static std::mutex lock;
    return lock;
}

void register_autograd(const std::string& ns, const std::string& name, int64_t inputs, int64_t outputs,
                       std::vector<int64_t> saved, std::vector<int64_t> positions) {
    const std::lock_guard<std::mutex> guard(registering());
    auto backward = c10::Dispatcher::singleton().findSchemaOrThrow((ns + "::" + name + "_backward").c_str(), "");
    auto formula = std::make_shared<const Formula>(Formula{inputs, outputs, std::move(saved), std::move(positions),
                                                           backward});
    auto* lib = new torch::Library(torch::Library::IMPL, ns, c10::DispatchKey::Autograd, __FILE__, __LINE__);
    lib->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(std::make_unique<AutogradKernel>(formula)));
    libraries().push_back(lib);
}

// Why `target` cannot stand for NS::NAME, or "" where it can: it must take what NS::NAME takes,
// type for type (a binding whose float param is an int, which Python's call converted, is refused
// and torch_library keeps Python's kernel for it) and return tensors. Refusals are returned, not
// thrown: nothing is registered then.
std::string route_refusal(const c10::OperatorHandle& source, const c10::OperatorHandle& found) {
    const auto& want = source.schema().arguments();
    const auto& have = found.schema().arguments();
    if (want.size() != have.size()) {
        return "it takes " + std::to_string(have.size()) + " arguments, not " + std::to_string(want.size());
    }
    for (size_t i = 0; i < want.size(); ++i) {
        if (!(*want[i].type() == *have[i].type())) {
            return "its argument " + std::to_string(i) + " is " + have[i].type()->str() + ", not " +
                   want[i].type()->str();
        }
    }
    for (const auto& r : found.schema().returns()) {
        if (r.type()->kind() != c10::TypeKind::TensorType && !(*r.type() == *c10::ListType::ofTensors())) {
            return "it returns a " + r.type()->str() + ", not tensors";
        }
    }
    return "";
}

std::string register_route(const std::string& ns, const std::string& name, const std::string& key,
                           const std::string& target, std::vector<int64_t> pick, int64_t inputs) {
    const std::lock_guard<std::mutex> guard(registering());
    auto& dispatcher = c10::Dispatcher::singleton();
    const auto source = dispatcher.findSchema({ns + "::" + name, ""});
    const auto found = dispatcher.findSchema({target, ""});
    if (!source || !found) return (source ? target : ns + "::" + name) + " is not defined";
    auto refused = route_refusal(*source, *found);
    if (!refused.empty()) return target + ": " + refused;
    auto* lib = new torch::Library(torch::Library::IMPL, ns, c10::parseDispatchKey(key), __FILE__, __LINE__);
    lib->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                                std::make_unique<RouteKernel>(*found, std::move(pick), inputs)));
    libraries().push_back(lib);
    return "";
}

}  // namespace

// brrr loads this as torch.ops.brrr_native; an exported package (brrr export) compiles it into its own
// extension under a namespace of its own, so that package and brrr, or two packages, share a process.
#ifndef BRRR_NATIVE_NAMESPACE
#define BRRR_NATIVE_NAMESPACE brrr_native
#endif

TORCH_LIBRARY(BRRR_NATIVE_NAMESPACE, m) {
    m.def("autograd(str ns, str name, int inputs, int outputs, int[] saved, int[] positions) -> ()",
          &register_autograd);
    m.def("route(str ns, str name, str key, str target, int[] pick, int inputs) -> str", &register_route);
}
