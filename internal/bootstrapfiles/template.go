package bootstrapfiles

func (r *reader) templates() {}
