# Plot 3: time over the (Br, Bc) grid of one workload, measured and predicted side by side.
# dat block 0: Bc Br measured_ms predicted_ms (fastest variant/layout of each tile);
# block 1: best measured cell (Bc Br); block 2: best predicted cell.
# xt, yt: tic lists '("16" 16, ...)' of the tiles present; wl: workload description; cbmin, cbmax: colour range (ms); xmin..ymax: tile ranges.
w = 1300; h = 620
load common
set multiplot layout 1,2 title sprintf('%s: kernel time over the tile grid, %s', gpu, wl) font ',15'
r = sqrt(2.0)
set logscale x 2
set logscale y 2
# linear colour scale: within one workload times span a few x, and linear tics stay readable
set xrange [xmin/r : xmax*r]
set yrange [ymin/r : ymax*r]
set cbrange [cbmin : cbmax]
set format cb '%g'
set cblabel 'time (ms)' offset 1,0
set xlabel 'Bc (key/value rows per iteration)'
set ylabel 'Br (query rows per block)'
eval 'set xtics '.xt
eval 'set ytics '.yt
set grid noxtics noytics
set palette defined (0 '#2c7bb6', 1 '#abd9e9', 2 '#ffffbf', 3 '#fdae61', 4 '#d7191c')
set style fill solid 1.0 border lc rgb 'white'
unset key
set size square
do for [col = 3:4] {
  set title (col == 3 ? 'measured (fastest variant/layout per tile; best outlined)' : 'predicted by the flashtune model (best outlined)')
  plot dat index 0 using 1:2:($1/r):($1*r):($2/r):($2*r):(column(col)) with boxxyerror fc palette notitle, \
       dat index 0 using 1:2:(sprintf('%.3g', column(col))) with labels font ',11' notitle, \
       dat index (col == 3 ? 1 : 2) using 1:2:($1/r):($1*r):($2/r):($2*r) with boxxyerror \
         fs empty border lc rgb '#000000' lc rgb '#000000' lw 5 notitle
}
unset multiplot
