package agent

import (
	"fmt"
	"os"
)

// pipes are the agent's stdio. Run keeps the parent ends; the child ends are
// closed in the parent once the child has them, so that EOF on stdout and
// stderr means every process holding them is gone.
type pipes struct {
	inR, inW   *os.File // nil when stdin is /dev/null
	outR, outW *os.File
	errR, errW *os.File
}

func openPipes(withStdin bool) (*pipes, error) {
	p := &pipes{}
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	growPipe(p.outR)
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	if withStdin {
		if p.inR, p.inW, err = os.Pipe(); err != nil {
			p.closeAll()
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
	}
	return p, nil
}

func (p *pipes) closeChildEnds() {
	for _, f := range []*os.File{p.inR, p.outW, p.errW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (p *pipes) closeAll() {
	p.closeChildEnds()
	for _, f := range []*os.File{p.inW, p.outR, p.errR} {
		if f != nil {
			_ = f.Close()
		}
	}
}
