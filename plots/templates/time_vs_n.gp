# Plot 2: time against N for fixed tiles and d: measured points, flashtune model lines.
# dat: for panel p (0..np-1) and series s (0..ns-1): block 2(p ns + s) holds N measured_ms, the
# next block N model_ms over a dense N grid. p1..p(np): panel titles (the config); s1..s(ns):
# series labels (what B is); d: the head dimension all of them share.
w = (np == 1 ? 900 : 1600); h = 720
load common
set multiplot layout 1,np title sprintf('%s: kernel time vs sequence length N, d=%d (points: measured; lines: flashtune model)', gpu, d) font ',15'
set logscale x 2
set logscale y 10
set format x '%g'
set format y '%g'
set xlabel 'sequence length N (tokens)'
set ylabel 'kernel time (ms)'
# keep the first and last N off the frame
set offsets graph 0.03, graph 0.03, 0, 0
set key top left box opaque samplen 3 spacing 1.2
do for [p = 0:np-1] {
  set title value(sprintf('p%d', p+1)) font ',13'
  plot for [s = 0:ns-1] dat index (2*(p*ns + s) + 1) using 1:2 with lines lt (s+1) lw 2 notitle, \
       for [s = 0:ns-1] dat index (2*(p*ns + s)) using 1:2 with points lt (s+1) pt 7 ps 1.8 \
         title value(sprintf('s%d', s+1)).': measured', \
       NaN with lines lc rgb '#444444' lw 2 title 'flashtune model'
}
unset multiplot
