#include "fit/coefficient_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/Dense>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include "model/decode_model.h"
#include "model/predict.h"

namespace flashtune::fit {
namespace {

const model::CoefficientInfo& info_of(const std::string& name) {
  static const auto table = model::coefficient_table();
  for (const model::CoefficientInfo& ci : table)
    if (name == ci.name) return ci;
  std::string known;
  for (const model::CoefficientInfo& ci : table) known += (known.empty() ? "" : ", ") + std::string(ci.name);
  throw std::invalid_argument("unknown coefficient '" + name + "' (known: " + known + ")");
}

// x in R <-> value in (min, max).
double to_value(const model::CoefficientInfo& ci, double x) { return ci.min + (ci.max - ci.min) / (1.0 + std::exp(-x)); }
double to_x(const model::CoefficientInfo& ci, double v) {
  const double eps = 1e-9;
  double t = (v - ci.min) / (ci.max - ci.min);
  t = std::min(1.0 - eps, std::max(eps, t));
  return std::log(t / (1.0 - t));
}

struct LogResiduals {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;

  const std::vector<const FitPoint*>* points;
  const model::GpuSpec* gpu;
  model::Coefficients start;
  std::vector<const model::CoefficientInfo*> free;
  bool absolute = false;
  mutable int evaluations = 0;

  int inputs() const { return int(free.size()); }
  int values() const { return int(points->size()); }
  model::Coefficients coefficients(const Eigen::VectorXd& x) const {
    model::Coefficients k = start;
    for (std::size_t i = 0; i < free.size(); ++i) k.*(free[i]->member) = to_value(*free[i], x[Eigen::Index(i)]);
    return k;
  }
  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& f) const {
    ++evaluations;
    const model::Coefficients k = coefficients(x);
    for (std::size_t i = 0; i < points->size(); ++i) {
      const FitPoint& p = *(*points)[i];
      const double r = std::log(predicted_time(p, *gpu, k) / p.measured_s);
      f[Eigen::Index(i)] = absolute ? r / std::sqrt(std::max(std::abs(r), 1e-3)) : r;
    }
    return 0;
  }
};

std::string describe(Eigen::LevenbergMarquardtSpace::Status s) {
  using namespace Eigen::LevenbergMarquardtSpace;
  switch (s) {
    case RelativeReductionTooSmall: return "converged (relative reduction of the cost below tolerance)";
    case RelativeErrorTooSmall: return "converged (relative change of the coefficients below tolerance)";
    case RelativeErrorAndReductionTooSmall: return "converged (cost and coefficients both stable)";
    case CosinusTooSmall: return "converged (residuals orthogonal to the Jacobian)";
    case TooManyFunctionEvaluation: return "stopped at the evaluation limit";
    case FtolTooSmall:
    case XtolTooSmall:
    case GtolTooSmall: return "stopped: tolerance too small for further progress";
    default: return "stopped (Eigen status " + std::to_string(int(s)) + ")";
  }
}

}  // namespace

std::vector<std::string> default_free_coefficients() {
  return {"fp32_efficiency",    "smem_efficiency",         "issue_overhead",       "l2_efficiency",
          "latency_warps",      "shared_latency_warps",    "iteration_latency_cycles", "overlapped_iteration_cycles",
          "block_latency_cycles", "launch_overhead_us", "overlap_exponent", "tensor_efficiency", "memory_overlap_exponent", "phase_overlap_exponent",
          "stall_exposure"};
}

bool coefficient_informed(const std::string& name, const std::vector<const FitPoint*>& points) {
  // The decode family's own coefficients: only its measurements read them.
  if (model::decode_only_coefficient(name.c_str())) {
    for (const FitPoint* p : points)
      if (p->c.variant == Variant::Decode) return true;
    return false;
  }
  if (name != "tensor_efficiency" && name != "phase_overlap_exponent" && name != "stall_exposure") return true;
  for (const FitPoint* p : points)
    if (p->geometry->per_kv_tile.mma > 0 || p->geometry->per_kv_tile.mma16 > 0) return true;
  return false;
}

void check_coefficient_names(const std::vector<std::string>& names) {
  for (const std::string& n : names) info_of(n);
}

std::size_t min_points_for_fit(std::size_t free_count) { return 5 * std::max<std::size_t>(free_count, 1); }

double predicted_time(const FitPoint& p, const model::GpuSpec& gpu, const model::Coefficients& k) {
  if (p.c.variant == Variant::Decode && p.splits > 0) return model::predict_decode(p.w, p.c, gpu, k, p.splits, p.decode_run).time_s;
  return model::predict(p.w, *p.geometry, gpu, k, p.registers).time_s;
}

double rms_log_error(const std::vector<const FitPoint*>& points, const model::GpuSpec& gpu, const model::Coefficients& k) {
  double sum = 0;
  for (const FitPoint* p : points) {
    const double r = std::log(predicted_time(*p, gpu, k) / p->measured_s);
    sum += r * r;
  }
  return points.empty() ? 0 : std::sqrt(sum / double(points.size()));
}

FitResult fit_coefficients(const std::vector<const FitPoint*>& points, const model::GpuSpec& gpu,
                           const model::Coefficients& start, const std::vector<std::string>& asked, FitLoss loss) {
  std::vector<std::string> free, uninformed;
  for (const std::string& name : asked) (coefficient_informed(name, points) ? free : uninformed).push_back(name);
  if (free.empty()) {
    std::string why = "no coefficient to fit";
    if (!uninformed.empty()) why += " (" + uninformed.front() + ": no measurement of a kernel that uses it)";
    throw std::invalid_argument(why);
  }
  const std::size_t need = min_points_for_fit(free.size());
  if (points.size() < need)
    throw std::invalid_argument("too few measurements to fit " + std::to_string(free.size()) + " coefficients: " +
                                std::to_string(points.size()) + " ok measurements, at least " + std::to_string(need) +
                                " needed (5 per coefficient)");
  LogResiduals f;
  f.absolute = loss == FitLoss::Absolute;
  f.points = &points;
  f.gpu = &gpu;
  f.start = start;
  for (const std::string& name : free) f.free.push_back(&info_of(name));
  Eigen::VectorXd x(f.inputs());
  for (std::size_t i = 0; i < f.free.size(); ++i) x[Eigen::Index(i)] = to_x(*f.free[i], start.*(f.free[i]->member));

  FitResult r;
  r.free = free;
  r.uninformed = uninformed;
  r.rms_log_start = rms_log_error(points, gpu, start);
  Eigen::NumericalDiff<LogResiduals> numeric(f);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<LogResiduals>> lm(numeric);
  lm.parameters.maxfev = 400 * (f.inputs() + 1);
  lm.parameters.xtol = 1e-7;
  lm.parameters.ftol = 1e-9;
  r.status = describe(lm.minimize(x));
  r.coefficients = f.coefficients(x);
  r.rms_log_end = rms_log_error(points, gpu, r.coefficients);
  r.evaluations = numeric.evaluations;
  // Never hand back something worse than the start (a kink of the max() can mislead a step), by
  // the loss that was minimised.
  auto cost = [&](const model::Coefficients& k) {
    if (loss == FitLoss::Squares) return rms_log_error(points, gpu, k);
    double sum = 0;
    for (const FitPoint* p : points) sum += std::abs(std::log(predicted_time(*p, gpu, k) / p->measured_s));
    return sum;
  };
  if (cost(r.coefficients) > cost(start)) {
    r.coefficients = start;
    r.rms_log_end = r.rms_log_start;
    r.status += "; kept the start values (the fit did not improve on them)";
  }
  return r;
}

}  // namespace flashtune::fit
