# Decode time against the K/V length (issue 26), one panel per element type. Panel p (1..np): title
# p<p>, n<p> series in blocks o<p> .. o<p> + n<p> - 1 (keys, measured at the model's split, best
# measured split, model at its split, bytes / copy bandwidth; all ms), series labels s<p>_<s>;
# copy: the copy bandwidth (GB/s) the dashed floor divides by.
w = (np == 1 ? 900 : 1600); h = 760
load common
set multiplot layout 1,np title sprintf("%s: decode time vs K/V length\nfilled: measured at the model's split; open: the best split measured; solid: flashtune model; dashed: Q + K + V + O bytes / %g GB/s copy", gpu, copy) font ',14'
set logscale x 2
set logscale y 10
set format x '%g'
set format y '%g'
set xlabel 'keys per head (K/V length)'
set ylabel 'time (ms)'
set offsets graph 0.03, graph 0.03, 0, 0
set key top left box opaque samplen 3 spacing 1.2
do for [p = 1:np] {
  n = value(sprintf('n%d', p)); o = value(sprintf('o%d', p))
  set title value(sprintf('p%d', p)) font ',13'
  plot for [s = 1:n] dat index (o + s - 1) using 1:2 with points lt s pt 7 ps 1.6 title value(sprintf('s%d_%d', p, s)), \
       for [s = 1:n] dat index (o + s - 1) using 1:3 with points lt s pt 6 ps 2.4 notitle, \
       for [s = 1:n] dat index (o + s - 1) using 1:4 with lines lt s lw 2 notitle, \
       for [s = 1:n] dat index (o + s - 1) using 1:5 with lines lt s lw 1 dt 2 notitle
}
unset multiplot
