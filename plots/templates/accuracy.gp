# Plot 1: predicted against measured time, log-log, one panel per model, coloured by variant.
# dat: one block per variant (label in `variants`, colour in `colours`), columns:
#   measured_ms  ours_ms  roofline_ms  seed_ms.
# Per panel m (1..3): tm, sm (title lines: model, accuracy), lom, him (axis range, ms; each panel
# its own, since the baselines are off by orders of magnitude).
w = 1900; h = 720
load common
set multiplot layout 1,3 title sprintf('%s: predicted vs measured kernel time (one point per workload and config)', gpu) font ',16'
set logscale xy
set size ratio -1
set format x '%g'
set format y '%g'
set xlabel 'measured time (ms)'
set ylabel 'predicted time (ms)'
nv = words(variants)
# Dense scatter: small, partly transparent markers ('#AARRGGBB', AA = transparency).
see_through(c) = '#50'.c[2:]
do for [m = 1:3] {
  set title value(sprintf('t%d', m))."\n".value(sprintf('s%d', m)) font ',12'
  lo = value(sprintf('lo%d', m)); hi = value(sprintf('hi%d', m))
  set xrange [lo:hi]
  set yrange [lo:hi]
  if (m == 1) { set key top left box opaque samplen 2 spacing 1.1 } else { unset key }
  plot x with lines lc rgb '#000000' lw 1.5 title 'y = x', \
       1.1*x with lines lc rgb '#777777' dt 2 title '±10%', \
       0.9*x with lines lc rgb '#777777' dt 2 notitle, \
       for [i = 1:nv] dat index (i-1) using 1:(column(m+1)) with points pt 7 ps 0.7 \
         lc rgb see_through(word(colours, i)) notitle, \
       for [i = 1:nv] NaN with points pt 7 ps 1.4 lc rgb word(colours, i) title word(variants, i)
}
unset multiplot
