#include "plots/drawer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "plots/plot_set.h"
#include "profile/output_file.h"

namespace flashtune::plots {
namespace {

// An output path that names one of the command's inputs is refused before anything is written.
void require_not_input(const std::string& path, const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs)
    if (!in.empty() && same_file(path, in)) throw std::runtime_error(path + ": would overwrite the input " + in);
}

// gnuplot exits 0 when its output hits a full disk or a file-size limit, leaving a truncated
// file: an SVG must end with its closing tag and a PNG with its IEND chunk.
bool plot_file_complete(const std::string& path, const std::string& term) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const std::streamoff size = in.tellg();
  const std::streamoff tail_size = std::min<std::streamoff>(size, 64);
  std::string tail(static_cast<std::size_t>(tail_size), '\0');
  in.seekg(size - tail_size);
  in.read(tail.data(), tail_size);
  if (term == "svg") return tail.find("</svg>") != std::string::npos;
  static const char kIend[] = {'I', 'E', 'N', 'D', '\xAE', '\x42', '\x60', '\x82'};
  return tail.size() >= 8 && tail.compare(tail.size() - 8, 8, std::string(kIend, 8)) == 0;
}

}  // namespace

void Drawer::draw(const std::string& stem, const std::string& tmpl, const std::string& data, GnuplotVars vars) const {
  if (r_.plan) {  // check_plot_outputs: list, write nothing
    r_.plan->emplace_back(r_.out_dir + "/" + stem, tmpl);
    return;
  }
  const std::string dat = r_.out_dir + "/" + stem + ".dat";
  for (const char* ext : {".dat", ".svg", ".png"}) require_not_input(r_.out_dir + "/" + stem + ext, r_.inputs);
  // Each file is written under a temporary name and renamed when complete: a failed or cut-short
  // write leaves the previous file as it was.
  write_output_atomic(dat, data);
  vars.emplace_back("dat", gnuplot_quote(dat));
  vars.emplace_back("gpu", gnuplot_quote(r_.gpu_name));
  // `load common` in the templates: a relative name resolves against gnuplot's working
  // directory, so pass the full path.
  vars.emplace_back("common", gnuplot_quote(r_.template_dir + "/common.gp"));
  for (const char* term : {"svg", "png"}) {
    const std::string out = r_.out_dir + "/" + stem + "." + term;
    // gnuplot writes the staged temporary; it replaces the plot (a link followed, the mode kept)
    // only when complete.
    StagedOutput staged = StagedOutput::written_by(out, [&](const std::string& temp) {
      GnuplotVars v = vars;
      v.emplace_back("term", gnuplot_quote(term));
      v.emplace_back("out", gnuplot_quote(temp));
      run_gnuplot(r_.gnuplot, r_.template_dir + "/" + tmpl + ".gp", v);
      if (!plot_file_complete(temp, term))
        throw OutputError(out + ": gnuplot wrote an incomplete file (disk full or file-size limit?); the previous "
                                "plot is unchanged");
    });
    staged.commit();
  }
}

std::string& Blocks::operator[](const std::string& label) {
  auto it = std::find(labels.begin(), labels.end(), label);
  if (it != labels.end()) return text[std::size_t(it - labels.begin())];
  labels.push_back(label);
  text.emplace_back();
  return text.back();
}

std::string Blocks::joined() const {
  std::string s;
  for (std::size_t i = 0; i < text.size(); ++i) s += (i ? "\n\n" : "") + text[i];
  return s;
}

VariantBlocks variant_blocks(const std::map<Variant, std::string>& rows) {
  Blocks blocks;
  std::vector<std::string> colours;
  for (Variant v : kAllVariants)
    if (auto it = rows.find(v); it != rows.end()) {
      blocks[variant_name(v)] = it->second;
      colours.push_back(variant_colour(v));
    }
  return {blocks.joined(),
          {{"variants", gnuplot_quote(words_of(blocks.labels))}, {"colours", gnuplot_quote(words_of(colours))}}};
}

std::string num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string words_of(const std::vector<std::string>& labels) {
  std::string s;
  for (const auto& l : labels) s += (s.empty() ? "" : " ") + l;
  return s;
}

std::string safe_stem(const std::string& s) {
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_') ? ch : '_';
  if (out == s && !out.empty()) return out;
  // A name that had to change gets a hash of the name as written, so "a/b" and "a_b" (or "a b")
  // write different files: heatmap_a_b-9c2f51e0 beside heatmap_a_b. Stable across runs and
  // selections (FNV-1a, 32 bits).
  std::uint32_t h = 2166136261u;
  for (const char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 16777619u;
  char tag[16];
  std::snprintf(tag, sizeof tag, "-%08x", h);
  return (out.empty() ? "workload" : out) + tag;
}

std::string workload_text(const Workload& w) {
  return "B=" + std::to_string(w.B) + " N=" + std::to_string(w.N) + inference_suffix(w) + " d=" + std::to_string(w.d) +
         (w.causal ? " causal" : "");
}

std::string tile_text(const TileConfig& c) {
  return std::string(variant_name(c.variant)) + " " + std::to_string(c.Br) + "x" + std::to_string(c.Bc) + " " +
         layout_name(c.layout);
}

const char* variant_colour(Variant v) {
  switch (v) {
    case Variant::RowSmem: return "#0072B2";
    case Variant::RowReg: return "#D55E00";
    case Variant::WarpGroups: return "#009E73";
    case Variant::RegTile2D: return "#CC79A7";
    // The tensor-core pair: orange and sky blue, so 3xTF32 and 1xTF32 read as one family.
    case Variant::MmaTf32x3: return "#E69F00";
    case Variant::MmaTf32x1: return "#56B4E9";
    case Variant::Mma16: return "#117733";  // the 16-bit family: dark green, apart from the TF32 pair
    case Variant::Wgmma16: return "#882255";  // the Hopper-native 16-bit family: wine
    case Variant::Decode: return "#AA4499";   // split-KV decode: purple
    // The Hopper-native TF32 pair: the mma.sync pair's hues, darker.
    case Variant::WgmmaTf32x3: return "#B07800";
    case Variant::WgmmaTf32x1: return "#2B7BA8";
  }
  return "#000000";
}

int layout_point_type(Layout l) {
  switch (l) {
    case Layout::Plain: return 7;
    case Layout::Padded: return 5;
    case Layout::Swizzled: return 9;
  }
  return 7;
}

}  // namespace flashtune::plots
