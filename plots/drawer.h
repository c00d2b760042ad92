// What every plot shares: writing its .dat file and running its gnuplot template once per format
// (SVG, PNG); the data blocks gnuplot reads with `index`; number formatting; the fixed colour of
// each variant and point shape of each layout, so a variant looks the same in every plot.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/traits/tile_config.h"
#include "plots/gnuplot_runner.h"

namespace flashtune::plots {

struct PlotRequest;

class Drawer {
 public:
  explicit Drawer(const PlotRequest& r) : r_(r) {}
  // Writes out_dir/stem.dat and draws stem.svg + stem.png from templates/tmpl.gp. The templates
  // also get dat, gpu (the GPU's name for titles), common (common.gp), term and out.
  void draw(const std::string& stem, const std::string& tmpl, const std::string& data, GnuplotVars vars) const;

 private:
  const PlotRequest& r_;
};

// Blocks keyed by a label, in first-seen order; gnuplot separates blocks by two blank lines.
struct Blocks {
  std::vector<std::string> labels;
  std::vector<std::string> text;
  std::string& operator[](const std::string& label);
  std::string joined() const;
};

// One block per variant present in `rows` (data lines), in kAllVariants order, with the gnuplot
// variables `variants` (labels) and `colours` (variant_colour()) the templates index with word().
struct VariantBlocks {
  std::string data;
  GnuplotVars vars;
};
VariantBlocks variant_blocks(const std::map<Variant, std::string>& rows);

std::string num(double x);                                // "%.6g"
std::string words_of(const std::vector<std::string>& labels);  // space-separated, for gnuplot's word()
std::string safe_stem(const std::string& s);               // file-name-safe form of a workload name (hash-tagged when changed: one file per name)
std::string workload_text(const Workload& w);              // "B=10 N=2048 d=64 causal"
std::string tile_text(const TileConfig& c);                // "regtile_2d 128x64 swizzled"

// Okabe-Ito colours (colour-blind safe), one per variant in every plot (every one of kAllVariants
// has its own): "#RRGGBB".
const char* variant_colour(Variant v);
// gnuplot point types, one per layout: filled circle (plain), filled square (padded), filled
// triangle (swizzled).
int layout_point_type(Layout l);

}  // namespace flashtune::plots
