/*
Copyright 2026 The memcached-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

var colors = map[string]color.RGBA{
	"raw":   {150, 150, 150, 255},
	"stock": {230, 140, 40, 255},
	"this":  {40, 110, 200, 255},
}

var names = map[string]string{"raw": "raw-create limit", "stock": "stock helm-operator", "this": "this operator"}

// panel is one bar chart: a metric of some variants at every N (medians).
type panel struct {
	title    string
	variants []string
	value    func(result) float64
	format   string
}

// chart draws the medians of the main metrics as grouped bar charts into a PNG.
func chart(path string, o options, results []result) error {
	panels := []panel{
		{"time to all Deployed (s)", []string{"raw", "stock", "this"}, seconds, "%.1f"},
		{"idle CPU per reconcile (ms)", []string{"stock", "this"}, idleCPUms, "%.1f"},
		{"RSS at idle (MB)", []string{"stock", "this"}, rssMB, "%.0f"},
	}
	const pw, ph, top = 420, 420, 60
	img := image.NewRGBA(image.Rect(0, 0, pw*len(panels), ph+top))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	x := 20
	for _, v := range []string{"raw", "stock", "this"} {
		fill(img, image.Rect(x, 18, x+14, 32), colors[v])
		text(img, x+20, 30, names[v])
		x += 40 + 7*len(names[v])
	}
	for i, p := range panels {
		drawPanel(img, image.Rect(i*pw, top, (i+1)*pw, top+ph), o, results, p)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func drawPanel(img *image.RGBA, r image.Rectangle, o options, results []result, p panel) {
	text(img, r.Min.X+20, r.Min.Y+14, p.title)
	base := r.Max.Y - 30
	height := r.Dy() - 80
	maxV := 0.0
	for _, n := range o.sizes {
		for _, v := range p.variants {
			if m := summarize(pick(results, v, n, p.value)).med; m > maxV {
				maxV = m
			}
		}
	}
	if maxV == 0 {
		maxV = 1
	}
	fill(img, image.Rect(r.Min.X+20, base, r.Max.X-20, base+1), color.RGBA{0, 0, 0, 255})
	group := (r.Dx() - 40) / len(o.sizes)
	bar := (group - 20) / len(p.variants)
	for gi, n := range o.sizes {
		gx := r.Min.X + 30 + gi*group
		text(img, gx+group/2-20, base+16, fmt.Sprintf("N=%d", n))
		for vi, v := range p.variants {
			m := summarize(pick(results, v, n, p.value)).med
			h := int(float64(height) * m / maxV)
			bx := gx + vi*bar
			fill(img, image.Rect(bx, base-h, bx+bar-4, base), colors[v])
			text(img, bx, base-h-4, fmt.Sprintf(p.format, m))
		}
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

func text(img *image.RGBA, x, y int, s string) {
	d := &font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
